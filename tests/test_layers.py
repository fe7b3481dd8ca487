"""The layout's rules (README "Layout of the code"), read from the source with `ast`:
imports run only down the stages, judging knows no operator, only the operator registry
names an operator folder, no module grows past the team's size limit, and no generic
code names an operator's tensors or axes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "aclcheck"

#: The rooms from the bottom up: a module may import its own room and rooms below it.
#: Room 0 holds the facts every stage shares (top-level modules).
ORDER = ("cases", "judging", "ops", "report", "store", "triage", "suite", "impls", "running",
         "cli")
TOP_LEVEL_ABOVE = {"pytest_plugin": "cli", "__main__": "cli"}  # entry points
MAX_LINES = 450  # the layout's target (the team's limit is ~600)
TENSOR_NAMES = re.compile(r"grad_output|gradOutput|self_shape|grad_shape|grad_dtype|"
                          r"grad_format|in_hw|out_hw|spread_plan|window_bounds")


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def room(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    if len(rel.parts) > 1:
        return rel.parts[0]
    return TOP_LEVEL_ABOVE.get(rel.stem, "")


def rank(name: str) -> int:
    return ORDER.index(name) + 1 if name in ORDER else 0


def imported(path: Path) -> list[str]:
    """Every aclcheck module path a file imports (`aclcheck.x.y`, names included)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("aclcheck")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.startswith("aclcheck"):
            out += [f"{node.module}.{a.name}" for a in node.names]
    return out


def target_room(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return TOP_LEVEL_ABOVE.get(parts[1], "") if len(parts) > 1 else ""


def code_text(path: Path) -> list[tuple[int, str]]:
    """Identifiers and string constants of a module's code, without its docstrings and
    comments (which may name the operator they explain)."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, ast.keyword) and node.arg:
            out.append((node.value.lineno, node.arg))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            out.append((node.lineno, node.value))
    return out


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_stages(path: Path) -> None:
    mine = rank(room(path))
    up = [m for m in imported(path) if rank(target_room(m)) > mine]
    assert not up, f"{path.relative_to(PACKAGE)} imports a higher stage: {up}"


def test_the_vocabulary_and_judging_know_no_operator() -> None:
    for path in modules():
        targets = {target_room(m) for m in imported(path)}
        if room(path) == "cases":
            assert targets <= {"", "cases"}, path
        if room(path) == "judging":
            assert not targets & {"ops", "store", "impls", "running"}, path


def test_only_the_registry_names_an_operator_folder() -> None:
    folders = {p.name for p in (PACKAGE / "ops").iterdir()
               if p.is_dir() and p.name != "__pycache__"}
    assert folders, "no operator folder found"
    for path in modules():
        if room(path) == "ops":
            continue
        named = [m for m in imported(path)
                 if m.startswith("aclcheck.ops.") and m.split(".")[2] in folders]
        assert not named, f"{path.relative_to(PACKAGE)} imports an operator folder: {named}"


def test_no_module_past_the_size_limit() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in modules()}
    assert not {p: n for p, n in sizes.items() if n > MAX_LINES}


def test_generic_code_names_no_tensor_or_axis() -> None:
    found = [f"{p.relative_to(PACKAGE)}:{line}: {text!r}"
             for p in modules() if room(p) != "ops"
             for line, text in code_text(p) if TENSOR_NAMES.search(text)]
    assert not found, "\n".join(found)

"""In-process runs (`--no-isolate`): is aclcheck still itself after a kernel ran in it?

A kernel that runs in aclcheck's own process can change anything there; this cannot
stop a determined one (docs/verify.md, threat model: gate with isolation). It catches
the plain ways of faking a pass or losing the reports: replacing aclcheck's functions
(the judge, the comparison, the gate, the report writers), their code or its tables,
the interpreter's exits and builtins, numpy's functions, those modules themselves;
changing the working directory or the umask. After each in-process call
`IntegrityGuard.check` compares with the snapshot taken before the first one, puts it
all back, and names what changed (the call is then ERROR).

Exit handlers registered during a call cannot be taken back (and libraries register
some on first use): they mark the process `compromised`, and the CLI then ends without
running exit handlers, so none can replace its exit status.
"""

from __future__ import annotations

import atexit
import os
import sys
import types
from typing import Any

#: modules besides aclcheck's own whose functions the verdicts and reports depend on
WATCHED = ("builtins", "sys", "os", "os.path", "json", "math", "atexit", "shutil",
           "tempfile", "numpy", "ml_dtypes", "h5py", "jinja2", "rich", "click")

#: what this process can no longer vouch for (see the module docstring)
compromised: list[str] = []

_Entry = tuple[dict[str, Any], str, Any]


def _umask() -> int | None:
    """The process umask without changing it (Linux /proc), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _ours(name: str) -> bool:
    return name == "aclcheck" or name.startswith("aclcheck.")


def _constant(name: str) -> bool:
    """A public table (STANDARDS, FAILING...), not a private cache (_LOADED)."""
    return name.isupper() and not name.startswith("_")


class IntegrityGuard:
    """A snapshot of what an in-process kernel must leave alone; `check` after a call."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._code: list[tuple[types.FunctionType, Any, Any, Any]] = []
        self._tables: list[tuple[str, Any, Any]] = []
        modules = [(n, m) for n, m in list(sys.modules.items())
                   if isinstance(m, types.ModuleType) and (_ours(n) or n in WATCHED)]
        for name, module in modules:
            space = vars(module)
            ours = _ours(name)
            for key, value in list(space.items()):
                if not ours and (not callable(value) or key.endswith("hook")):
                    continue  # sys.*hook: test runners swap them per test
                self._entries.append((space, key, value))
                self._remember(value, ours, f"{name}.{key}")
        self._modules = dict(modules)
        self._cwd = os.getcwd()
        self._umask = _umask()
        self._exit_handlers = exit_handlers()

    def _remember(self, value: Any, ours: bool, where: str) -> None:
        if isinstance(value, types.FunctionType):
            self._code.append((value, value.__code__, value.__defaults__,
                               value.__kwdefaults__))
        elif ours and isinstance(value, type) and _ours(value.__module__):
            for key, member in list(vars(value).items()):
                self._entries.append((_ClassSpace(value), key, member))
                if isinstance(member, types.FunctionType):
                    self._code.append((member, member.__code__, member.__defaults__,
                                       member.__kwdefaults__))
        elif ours and _constant(where.rpartition(".")[2]) and isinstance(
                value, dict | list | set):
            self._tables.append((where, value, _copy(value)))

    def check(self) -> tuple[str, ...]:
        """What changed since the snapshot (put back where possible), by name."""
        changed: list[str] = []
        for space, key, value in self._entries:
            if space.get(key, _MISSING) is not value:
                space[key] = value
                changed.append(_name(space, key))
        for fn, code, defaults, kwdefaults in self._code:
            if (fn.__code__ is not code or fn.__defaults__ is not defaults
                    or fn.__kwdefaults__ is not kwdefaults):
                fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults
                changed.append(f"{fn.__module__}.{fn.__qualname__} (its code)")
        for where, table, copy in self._tables:
            if not _same(table, copy):
                _restore(table, copy)
                changed.append(f"{where} (its entries)")
        for name, module in self._modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                changed.append(f"sys.modules[{name!r}]")
        changed += self._process_state()
        return tuple(changed)

    def _process_state(self) -> list[str]:
        changed = []
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
        if cwd != self._cwd:
            try:
                os.chdir(self._cwd)
            except OSError:
                compromised.append("the working directory")
            changed.append("the working directory")
        umask = _umask()
        if umask is not None and umask != self._umask and self._umask is not None:
            os.umask(self._umask)
            changed.append("the umask")
        handlers = exit_handlers()
        if handlers is not None and self._exit_handlers is not None \
                and handlers > self._exit_handlers:
            compromised.append("exit handlers registered during a call")  # not ERROR:
            self._exit_handlers = handlers  # libraries register some on first use
        return changed


class _ClassSpace(dict):  # type: ignore[type-arg]
    """A class's namespace with the dict interface `check` uses (get / set)."""

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return vars(self.cls).get(key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        type.__setattr__(self.cls, key, value)


_MISSING = object()


def _name(space: dict[str, Any], key: str) -> str:
    if isinstance(space, _ClassSpace):
        return f"{space.cls.__module__}.{space.cls.__qualname__}.{key}"
    return f"{space.get('__name__', '?')}.{key}"


def _copy(table: Any) -> Any:
    if isinstance(table, dict):
        return list(table.items())
    return list(table)


def _same(table: Any, copy: list[Any]) -> bool:
    now = _copy(table)
    if len(now) != len(copy):
        return False
    if isinstance(table, dict):
        return all(k1 == k2 and v1 is v2 for (k1, v1), (k2, v2) in zip(now, copy, strict=True))
    if isinstance(table, set):
        return table == set(copy)
    return all(a is b for a, b in zip(now, copy, strict=True))


def _restore(table: Any, copy: list[Any]) -> None:
    table.clear()
    if isinstance(table, dict):
        table.update(copy)
    elif isinstance(table, set):
        table.update(copy)
    else:
        table.extend(copy)


def exit_handlers() -> int | None:
    """How many exit handlers are registered (None where the interpreter does not say)."""
    count = getattr(atexit, "_ncallbacks", None)
    return count() if callable(count) else None

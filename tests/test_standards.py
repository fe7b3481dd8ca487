"""Standards: names, published numbers, TOML overrides, tables and `aclcheck tolerances`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from aclcheck.cli import cli
from aclcheck.cli.tolerances import standard_table
from aclcheck.errors import UsageError
from aclcheck.judging.case.default_standard import DEFAULT_C
from aclcheck.judging.case.overrides import load_overrides
from aclcheck.judging.case.standards import (
    PUBLISHED,
    STANDARDS_BY_NAME,
    get_standard,
    judging,
    refusal,
)
from aclcheck.options import DEFAULT_STANDARD

NAMES = ("aclcheck", "cann-mixed", "cann-mere", "msopst", "torch-npu", "msprobe-ulp",
         "assert-close")


def render(table: object) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def write(tmp_path: Path, text: str, name: str = "tol.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_names_and_default() -> None:
    assert tuple(STANDARDS_BY_NAME) == NAMES
    assert DEFAULT_STANDARD == "aclcheck"
    assert set(PUBLISHED) == set(NAMES) - {"aclcheck"}
    for name in NAMES:
        std = get_standard(name)
        assert std.name == name
        for dtype in ("float16", "float32", "bfloat16"):
            assert set(std.table[dtype]) == set(std.param_names)


def test_unknown_standard_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="unknown standard 'cann'.*cann-mixed.*assert-close"):
        get_standard("cann")


@pytest.mark.parametrize(
    ("name", "dtype", "expected"),
    [
        ("cann-mixed", "float16", {"rtol": 2**-9, "atol": 2**-9, "cap": 0.1}),
        ("cann-mixed", "bfloat16", {"rtol": 2**-6, "atol": 2**-6, "cap": 1.0}),
        ("cann-mixed", "float32", {"rtol": 2**-10, "atol": 2**-16, "cap": 0.01}),
        ("cann-mere", "float16", {"T": 2**-10, "small_threshold": 2**-11,
                                  "small_error": 2**-16}),
        ("cann-mere", "bfloat16", {"T": 2**-7, "small_threshold": 2**-8}),
        ("cann-mere", "float32", {"T": 2**-13, "small_threshold": 2**-14,
                                  "small_error": 2**-30}),
        ("msopst", "float32", {"threshold": 0.01, "max_mismatch": 0.05, "max_error": 0.1}),
        ("torch-npu", "float16", {"prec": 1e-3, "mode": "rtol-equal"}),
        ("torch-npu", "bfloat16", {"prec": 1e-3, "mode": "allclose"}),
        ("torch-npu", "float32", {"prec": 1e-4}),
        ("msprobe-ulp", "float16", {"ulp_limit": 1.0, "max_ratio": 0.001}),
        ("msprobe-ulp", "float32", {"ulp_limit": 32.0, "max_ratio": 0.05, "mean_ulp": 64.0}),
        ("assert-close", "float16", {"rtol": 1e-3, "atol": 1e-5}),
        ("assert-close", "bfloat16", {"rtol": 1.6e-2, "atol": 1e-5}),
        ("assert-close", "float32", {"rtol": 1.3e-6, "atol": 1e-5}),
        ("assert-close", "float64", {"rtol": 1e-7, "atol": 1e-7}),  # torch's float64
        ("aclcheck", "float16", {"c": DEFAULT_C, "atol": 0.0, "accumulate": ""}),
        ("aclcheck", "float64", {"c": DEFAULT_C, "atol": 0.0, "accumulate": ""}),
    ],
)
def test_published_numbers(name: str, dtype: str, expected: dict) -> None:
    params = get_standard(name).params_for(dtype)
    for key, value in expected.items():
        assert params[key] == value


def test_float64_numbers_only_where_published(tmp_path: Path) -> None:
    """aclcheck's budget and torch's assert_close have float64 numbers; the others
    publish none and refuse by name."""
    assert judging("float64") == ("aclcheck", "assert-close")
    for name in set(NAMES) - {"aclcheck", "assert-close"}:
        with pytest.raises(ValueError, match=f"{name} has no float64 numbers"):
            get_standard(name).params_for("float64")
        assert "judged by aclcheck, assert-close" in (refusal(name, "float64") or "")
    assert refusal("assert-close", "float64") is None
    ov = load_overrides(write(tmp_path, "[aclcheck.fp64]\nc = 3\n"))
    assert get_standard("aclcheck").params_for("float64", "atlas-a2", ov)["c"] == 3.0
    assert "float64" in render(standard_table("assert-close"))
    assert "judges no float64 output" in render(standard_table("msopst"))


def test_overrides_precedence(tmp_path: Path) -> None:
    path = write(tmp_path, """
[cann-mixed]
cap = 0.5
[cann-mixed.fp16]
rtol = 0.001
[cann-mixed.atlas-a2]
atol = 0.25
[cann-mixed.atlas-a2.float16]
rtol = 0.002
[aclcheck]
c = 3
accumulate = "FLOAT16"
""")
    ov = load_overrides(path)
    std = get_standard("cann-mixed")
    assert std.params_for("float32", None, ov)["cap"] == 0.5
    assert std.params_for("float32", None, ov)["rtol"] == 2**-10
    assert std.params_for("float16", None, ov)["rtol"] == 0.001
    assert std.params_for("float16", "atlas-a3", ov)["rtol"] == 0.001
    on_a2 = std.params_for("float16", "atlas-a2", ov)
    assert (on_a2["rtol"], on_a2["atol"], on_a2["cap"]) == (0.002, 0.25, 0.5)
    acl = get_standard("aclcheck").params_for("bfloat16", "atlas-a2", ov)
    assert acl["c"] == 3.0 and acl["accumulate"] == "float16"
    assert ov.products("cann-mixed") == ("atlas-a2",)
    assert ov.products("msopst") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[cann]\nrtol = 1\n", r"unknown standard \[cann\]"),
        ("[cann-mixed]\nrtl = 1\n", r"\[cann-mixed\] unknown parameter 'rtl'.*valid: rtol"),
        ("[cann-mixed.float16]\nrtol = 'a'\n", r"\[cann-mixed.float16\] rtol: must be a number"),
        ("[cann-mixed.float16]\nrtol = -1\n", r"rtol: must be a finite number >= 0"),
        ("[cann-mixed.float16]\nrtol = true\n", r"rtol: must be a number"),
        ("[cann-mixed.atlas-x]\nrtol = 1\n", r"\[cann-mixed.atlas-x\] unknown table"),
        ("[cann-mixed.atlas-a2.float16.x]\nrtol = 1\n", r"unexpected table"),
        ("[cann-mixed.float64]\nrtol = 1\n", r"cann-mixed has no float64 numbers"),
        ("[aclcheck]\naccumulate = 'float64'\n", r"\[aclcheck\] accumulate: must be one of"),
        ("[torch-npu.float16]\nmode = 'exact'\n", r"mode: must be one of"),
        ("cann-mixed = 3\n", r"must be a table"),
        ("[cann-mixed\n", r"not valid TOML"),
    ],
)
def test_override_errors_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UsageError, match=message) as info:
        load_overrides(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_overrides_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read tolerances file"):
        load_overrides(tmp_path / "absent.toml")


def test_tables_render_numbers_and_rules(tmp_path: Path) -> None:
    text = render(standard_table("cann-mixed"))
    assert "cann-mixed" in text and "2^-9" in text and "0.01" in text and "cap" in text
    acl = render(standard_table("aclcheck"))
    assert "atlas-a2" in acl and "u=2^-24" in acl and "u=2^-11" in acl
    assert "fill 1/(H*W) in bfloat16" in acl
    ov = load_overrides(write(tmp_path, "[assert-close.atlas-a3.float16]\nrtol = 0.125\n"))
    shown = render(standard_table("assert-close", ov))
    assert "float16 on atlas-a3" in shown and "0.125" in shown
    shown = render(standard_table("aclcheck", load_overrides(
        write(tmp_path, "[aclcheck.atlas-a2]\naccumulate = 'input'\nc = 4\n", "b.toml"))))
    assert "bfloat16 (u=2^-8)" in shown and "4" in shown


def test_cli_lists_every_standard() -> None:
    result = CliRunner().invoke(cli, ["tolerances"])
    assert result.exit_code == 0, result.output
    for name in NAMES:
        assert f"{name}:" in result.output
    assert "Default standard: aclcheck" in result.output
    # the footer names its tables (rich markup used to eat "[...]"), 80 columns cut nothing
    assert "[standard.dtype], [standard.product]," in result.output
    assert "[standard.product.dtype]" in result.output
    for product in ("atlas-training", "atlas-inference", "atlas-a2", "atlas-a3"):
        assert f"│ {product} " in result.output


def test_cli_one_standard_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["tolerances", "--standard", "msprobe-ulp"])
    assert result.exit_code == 0
    assert "msprobe-ulp" in result.output and "cann-mixed" not in result.output
    result = runner.invoke(cli, ["tolerances", "--standard", "nope"])
    assert result.exit_code == 2
    assert "unknown standard 'nope'" in result.output
    assert "Traceback" not in result.output
    bad = write(tmp_path, "[msopst]\nthreshold = 'x'\n")
    result = runner.invoke(cli, ["tolerances", "--tolerances", str(bad)])
    assert result.exit_code == 2
    assert str(bad) in result.output and "threshold" in result.output
    good = write(tmp_path, "[msopst]\nthreshold = 0.02\n", "good.toml")
    result = runner.invoke(cli, ["tolerances", "--standard", "msopst", "--tolerances", str(good)])
    assert result.exit_code == 0 and "0.02" in result.output

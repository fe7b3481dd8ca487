"""Honest answers to misuse (issue 21, deliverable 6): an unknown family is named as
such, a kernel with the wrong signature is one usage error, not a verdict per case."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli


@pytest.fixture(scope="module")
def small_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("honest") / "small.h5"
    result = CliRunner().invoke(cli, ["generate", "-o", str(path), "--product", "atlas-a2",
                                      "--dtype", "float32", "--family", "global",
                                      "--family", "divisible"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


def verify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["verify", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_unknown_family_is_named_with_the_known_ones(small_golden: Path) -> None:
    code, out = verify(str(small_golden), "--family", "globl")
    assert code == 2
    assert "unknown family 'globl' (known in this file: divisible, global)" in out
    code, out = verify(str(small_golden), "--family", "!nosuch")
    assert code == 2 and "unknown family 'nosuch'" in out


@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
@pytest.mark.parametrize("kernel", ["one_arg", "three_args"])
def test_wrong_signature_is_one_usage_error(small_golden: Path, tmp_path: Path,
                                            isolate: str, kernel: str) -> None:
    module = tmp_path / "badsig.py"
    module.write_text("def one_arg(grad):\n    return grad\n\n\n"
                      "def three_args(grad, self_, extra):\n    return self_\n")
    report = tmp_path / "r.json"
    code, out = verify(str(small_golden), "--impl", f"{module}:{kernel}", isolate,
                       "--json", str(report))
    assert code == 2, out
    assert f"{kernel} cannot be called as {kernel}(grad_output, self): its signature is" \
        in " ".join(out.split())
    assert "ERROR" not in out


def test_a_type_error_inside_the_kernel_stays_a_verdict(small_golden: Path,
                                                        tmp_path: Path) -> None:
    module = tmp_path / "raises.py"
    module.write_text("def kernel(grad, self_):\n    raise TypeError('my own bug')\n")
    code, out = verify(str(small_golden), "--impl", f"{module}:kernel", "--no-isolate")
    assert code == 1 and "TypeError: my own bug" in out

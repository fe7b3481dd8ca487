"""`aclcheck products` through click's CliRunner: the capability table and its exit codes."""

from __future__ import annotations

from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.ops.adaptive_avg_pool2d_backward import contract


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_products_lists_every_product_in_full():
    code, out = run("products")
    assert code == 0
    for product_id in contract.PRODUCTS:
        assert product_id in out  # never truncated, even at 80 columns
    for dtype in contract.COMPUTE_DTYPES:
        assert dtype in out
    for fmt in contract.FORMATS:
        assert fmt in out
    assert "…" not in out


def test_products_marks_unsupported_dtypes_with_status():
    code, out = run("products")
    assert code == 0
    rows = {line.split()[1]: line for line in out.splitlines()
            if line.startswith("│ atlas-")}
    assert set(rows) == set(contract.PRODUCTS)
    for product_id, line in rows.items():
        lacking = len(contract.COMPUTE_DTYPES) - len(contract.product(product_id).dtypes)
        assert line.count("no (161002)") == lacking
        assert line.count("yes") == len(contract.product(product_id).dtypes)
    assert "161001" in out  # null pointer status in the caption


def test_products_accumulation_column():
    _, out = run("products")
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("│ atlas-")}
    assert "input dtype" in rows["atlas-training"] and "FP32" in rows["atlas-a2"]


def test_products_fits_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # an 80-column terminal, however pytest was started
    _, out = run("products")
    assert max(len(line) for line in out.splitlines()) <= 80


def test_products_help_and_usage_errors():
    code, out = run("products", "--help")
    assert code == 0 and "aclcheck products" in out
    code, out = run("products", "extra")
    assert code == 2 and "unexpected extra argument" in out
    code, out = run("products", "--bogus")
    assert code == 2 and "No such option" in out


def test_top_level_help_lists_products_and_exit_codes():
    code, out = run("--help")
    assert code == 0 and "products" in out and "Exit codes" in out

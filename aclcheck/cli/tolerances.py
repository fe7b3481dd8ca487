"""`aclcheck tolerances`: the tolerance standards as tables (with overrides applied).

The rendering of a standard lives here, in the CLI layer: judging/case/standards.py and
default_standard.py hold the numbers and the rules, this module draws them.
"""

from __future__ import annotations

import math
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.cli.options import click_option
from aclcheck.errors import UsageError
from aclcheck.judging.case.overrides import Overrides, load_overrides
from aclcheck.judging.case.rule import FLOAT64_ROW, STANDARD_DTYPES, ParamValue, Standard
from aclcheck.judging.case.standards import STANDARDS_BY_NAME, get_standard
from aclcheck.ops import default_operator, operator
from aclcheck.ops.operator import Operator
from aclcheck.options import DEFAULT_STANDARD, OP


def _fmt_value(value: ParamValue) -> str:
    if isinstance(value, str):
        return value or "product's"
    if value == 0:
        return "0"
    exp = math.log2(value) if value > 0 else 0.0
    if value > 0 and exp == int(exp) and abs(exp) >= 4:
        return f"2^{int(exp)}"
    return f"{value:g}"


def _u_text(fmt_name: str, u: float) -> str:
    return f"{fmt_name} (u=2^{int(math.log2(u))})"


def _aclcheck_table(std: type[Standard], overrides: Overrides | None, op: Operator) -> Table:
    table = Table(title=f"{std.name}: {std.title}", caption_justify="left")
    for col in ("product", "dtype", "accumulates in", "c", "atol", "windowed path",
                "one-window path"):
        # names and formats are never cut: the table grows (and wraps the free text)
        table.add_column(col, no_wrap=col in ("product", "dtype", "c", "atol"))
    rank = op.spatial_rank
    axes = [a.upper() for a in op.display.axis_names(rank + 2)[-rank:]]  # H, W (D, H, W)
    for prod in op.products.values():
        for dtype in (*prod.dtypes, *_code_only_dtypes(std, op, prod.id, prod.dtypes)):
            params = std.params_for(dtype, prod.id, overrides)
            general, global_ = op.paths(prod.id, dtype, str(params["accumulate"]) or None)
            acc = (general or global_).accumulate
            windows = (f"{general.name}: scale in {general.scale_format.name}, "
                       f"r={general.extra_roundings}" if general is not None and general.scaled
                       else f"{general.name}: no scale, r={general.extra_roundings}"
                       if general is not None else "none on this product"
                       if dtype in prod.dtypes else "none for this dtype (contract code)")
            if general is not None and general.inner is not None:
                windows += f" in {general.inner.name}"
            one = (f"{global_.name}: fill 1/({'*'.join(axes)}) in {global_.scale_format.name}"
                   if global_.scaled else f"{global_.name}: no scale")
            table.add_row(prod.id, dtype, _u_text(acc.name, acc.unit_roundoff),
                          _fmt_value(params["c"]), _fmt_value(params["atol"]), windows, one)
    table.caption = escape(
        f"{std.rule.format(magnitude_source=op.display.magnitude_source)}. r: roundings "
        "per term beyond the accumulation (fp32-atomic 1, matmul 2, 1x1 0). Finite golden "
        "beyond the dtype's overflow threshold: inf required (either near it); where the "
        "terms' magnitudes can overflow the accumulator, inf/NaN are accepted. The "
        "exact-rounding check (FLOAT16/BFLOAT16) is off for a product and dtype whose "
        "override raises c or atol."
    )
    return table


def _code_only_dtypes(std: type[Standard], op: Operator, product: str,
                      listed: tuple[str, ...]) -> tuple[str, ...]:
    """Dtypes the standard judges beyond the product's documented ones where the
    operator has a numeric path for them (float64: the 3D operator's DOUBLE 1x1x1 calls,
    valid under contract code)."""
    found = []
    for dtype in (d for d in std.dtypes() if d not in listed and d not in STANDARD_DTYPES):
        try:
            op.paths(product, dtype, None)
        except (KeyError, ValueError):  # no path: the operator never computes this dtype
            continue
        found.append(dtype)
    return tuple(found)


def standard_table(name: str, overrides: Overrides | None = None,
                   op: Operator | None = None) -> Table:
    """A rich Table of one standard: its numbers per dtype (and per product where the
    overrides make them differ), the rule as a caption."""
    std = get_standard(name)
    if std.name == DEFAULT_STANDARD:
        return _aclcheck_table(std, overrides, op or default_operator())
    table = Table(title=f"{std.name}: {std.title}", caption_justify="left", min_width=72)
    table.add_column("dtype", no_wrap=True)
    for p in std.param_names:
        table.add_column(p, justify="right", no_wrap=True)
    rows: list[tuple[str, str | None]] = [(d, None) for d in std.dtypes()]
    if overrides is not None:
        rows += [(d, prod) for prod in overrides.products(std.name)
                 for d in default_operator().products[prod].dtypes]
    for dtype, prod in rows:
        params = std.params_for(dtype, prod, overrides)
        label = dtype if prod is None else f"{dtype} on {prod}"
        table.add_row(label, *(_fmt_value(params[p]) for p in std.param_names))
    missing = "" if std.judges(FLOAT64_ROW) else (
        f" No {FLOAT64_ROW} numbers published: it judges no {FLOAT64_ROW} output.")
    table.caption = escape(f"{std.rule}. Source: {std.source}.{missing}")
    return table


@click.command()
@click.option("--standard", "names", multiple=True, metavar="NAME",
              help=f"Show only this standard (repeatable). One of: {', '.join(STANDARDS_BY_NAME)}.")
@click.option("--tolerances", "tolerances", type=click.Path(dir_okay=False, path_type=Path),
              help="TOML file of per-dtype / per-product overrides to apply.")
@click_option(OP)
@handle_errors
def tolerances(names: tuple[str, ...], tolerances: Path | None, op: str) -> None:
    """Print the tolerance standards: the rule and the numbers per dtype.

    The default standard, aclcheck, budgets every element from the golden's own error
    bound and demands the round-to-nearest-even result where the product's path computes
    an element exactly (docs/tolerances.md); the others are the published standards.

    \b
    Examples:
      aclcheck tolerances
      aclcheck tolerances --standard cann-mixed
      aclcheck tolerances --tolerances my-tolerances.toml --standard aclcheck
    """
    for name in names:
        if name not in STANDARDS_BY_NAME:
            raise UsageError(f"unknown standard {name!r}; valid: {', '.join(STANDARDS_BY_NAME)}")
    overrides = load_overrides(tolerances) if tolerances is not None else None
    chosen = operator(op)
    console = stdout_console()
    for name in names or tuple(STANDARDS_BY_NAME):
        console.print(standard_table(name, overrides, chosen))
        console.print()
    if not names:
        console.print(f"Default standard: {DEFAULT_STANDARD}. Overrides: --tolerances FILE "
                      "with tables [standard], [standard.dtype], [standard.product], "
                      "[standard.product.dtype].", markup=False)

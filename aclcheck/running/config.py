"""The configuration of one `aclcheck verify` run, as plain data.

One frozen dataclass holds every option of a run. The CLI builds it from its options,
the pytest plugin from its own, a script or another command directly:

    cfg = VerifyConfig(golden="suite.h5", impl="torch", isolate=True, timeout=10)
    cfg.check()                # usage errors before anything is loaded or run
    cfg.run_options()          # what aclcheck.running.calls needs
    cfg.repro("a2-fp32-...")   # the command that reruns one case with the same verdict

Every field comes from its option's declaration (aclcheck.options; the aclnn adapter's
in aclcheck.impls.aclnn_options): default, flag, and whether it can change a case's
verdict (`repro`). The repro line is generated from exactly those fields, so an option
added here cannot be left out of it; tests/test_verify_config.py checks that every option
of `aclcheck verify` is a field of this class. Nothing here imports click or rich.
"""

from __future__ import annotations

import glob
import shlex
from dataclasses import MISSING, dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aclcheck import options as o
from aclcheck.impls import aclnn_options as aclnn
from aclcheck.options import ACLNN_ONLY, config_field, required_field

if TYPE_CHECKING:
    from aclcheck.running.calls import RunOptions
    from aclcheck.store.file_guard import Role

__all__ = ["ACLNN_ONLY", "VerifyConfig"]

#: The options of `aclcheck verify`, in the order its help lists them.
VERIFY: tuple[o.Option, ...] = (*o.IMPLEMENTATION, *aclnn.OPTIONS, *o.SELECTION,
                                *o.JUDGEMENT, *(x for x in o.RUNNING if x.field),
                                *o.REPORTING)


@dataclass(frozen=True)
class VerifyConfig:
    """Every option of a verify run (see `aclcheck verify --help` for each flag)."""

    # -- what is judged
    golden: str = required_field("golden file (positional)")
    impl: str = config_field(o.IMPL)
    results: str | None = config_field(o.RESULTS)
    aclnn_lib_dirs: tuple[str, ...] = config_field(aclnn.LIB_DIRS)
    aclnn_device: int | None = config_field(aclnn.DEVICE)
    # -- which cases (selection filters; the repro names the case by --id instead)
    products: tuple[str, ...] = config_field(o.PRODUCTS)
    dtypes: tuple[str, ...] = config_field(o.DTYPES)
    formats: tuple[str, ...] = config_field(o.FORMATS)
    families: tuple[str, ...] = config_field(o.FAMILIES)
    ids: tuple[str, ...] = config_field(o.IDS)
    shard: str | None = config_field(o.SHARD)
    # -- how numbers are judged
    standards: tuple[str, ...] = config_field(o.STANDARDS)
    tolerances: str | None = config_field(o.TOLERANCES)
    accumulate: str | None = config_field(o.ACCUMULATE)
    overflow_mode: str | None = config_field(o.OVERFLOW_MODE)
    xfail: str | None = config_field(o.XFAIL)
    strict_xfail: bool = config_field(o.STRICT_XFAIL)
    # -- how calls run
    isolate: bool | None = config_field(o.ISOLATE)
    timeout: float = config_field(o.TIMEOUT)
    spin_rule: str = config_field(o.SPIN_RULE)
    memory_limit: int | None = config_field(o.MEMORY_LIMIT)
    repeat: int = config_field(o.REPEAT)
    deterministic: bool = config_field(o.DETERMINISTIC)
    stale_check: bool | None = config_field(o.STALE_CHECK)
    sequences: int = config_field(o.SEQUENCES)
    after: str | None = config_field(o.AFTER)
    jobs: int = config_field(o.JOBS)
    executor: str | None = config_field(o.EXECUTOR)
    probe: bool | None = config_field(o.PROBE)
    probe_budget: int = config_field(o.PROBE_BUDGET)
    # -- what is reported
    baseline: str | None = config_field(o.BASELINE)
    verbose: bool = config_field(o.VERBOSE)
    width: int | None = config_field(o.WIDTH)
    json_path: str | None = config_field(o.JSON)
    junit_path: str | None = config_field(o.JUNIT)
    html_path: str | None = config_field(o.HTML)

    def __post_init__(self) -> None:
        # from Python, a single string where a tuple is expected means one value
        # (VerifyConfig(standards="cann-mixed")), not one value per character
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(_default(f), tuple) and not isinstance(value, tuple):
                object.__setattr__(self, f.name,
                                   (value,) if isinstance(value, str) else tuple(value))

    # -- derived views

    @property
    def outputs(self) -> dict[str, str]:
        """The report files this run writes, by flag (checked writable before any case)."""
        paths = {"--json": self.json_path, "--junit": self.junit_path,
                 "--html": self.html_path}
        return {flag: p for flag, p in paths.items() if p}

    @property
    def standard_names(self) -> tuple[str, ...]:
        """The standards to judge by, the gating one first, without repeats."""
        return tuple(dict.fromkeys(self.standards or (o.DEFAULT_STANDARD,)))

    def selection(self) -> dict[str, Any]:
        """Keyword arguments of aclcheck.suite.filters.select."""
        return {"products": self.products, "dtypes": self.dtypes, "formats": self.formats,
                "families": self.families, "id_pattern": self.ids or None}

    def check(self) -> None:
        """Usage errors found before anything is loaded or run: unknown standards, a bad
        shard, unwritable report paths, a report that would replace an input. The one
        check of a run's options (the CLI, the pytest plugin and shrink/hunt call it)."""
        from aclcheck.errors import SuiteError, UsageError
        from aclcheck.judging.case.standards import STANDARDS_BY_NAME
        from aclcheck.report.files import check_writable
        from aclcheck.store.file_guard import check_apart
        from aclcheck.suite import sharding

        for name in self.standard_names:
            if name not in STANDARDS_BY_NAME:
                raise SuiteError(f"unknown standard {name!r}; valid: "
                                 f"{', '.join(STANDARDS_BY_NAME)}",
                                 option=o.STANDARDS.flag)
        if self.shard:
            sharding.parse_shard(self.shard)
        if self.executor:
            from aclcheck.executors import parse_executor

            parse_executor(self.executor)
        if self.after is not None and self.results is not None:
            raise UsageError("--after calls the implementation: not with --results",
                             option=o.AFTER.flag)
        check_writable(self.outputs)
        check_apart(*self.file_roles())

    def file_roles(self) -> tuple[list[Role], list[Role]]:
        """What the run reads and writes (aclcheck.store.file_guard)."""
        from aclcheck.impls.callable_impl import source_file
        from aclcheck.store.file_guard import Role

        inputs = [Role("GOLDEN", self.golden)] if self.golden else []
        for flag, path in (("--results", self.results), ("--tolerances", self.tolerances),
                           ("--xfail", self.xfail), ("--baseline", self.baseline)):
            if path:
                inputs.append(Role(flag, path))
        inputs += [Role("--aclnn-lib-dir", d, tree=True) for d in self.aclnn_lib_dirs]
        if self.results is None and ":" in self.impl:
            source = source_file(self.impl)
            if source is not None:
                inputs.append(Role("--impl", source))
        return inputs, [Role(flag, path) for flag, path in self.outputs.items()]

    def run_options(self) -> RunOptions:
        """What the runner needs (reads the tolerance file, if any)."""
        from aclcheck.judging.case.judge import JudgeOptions
        from aclcheck.judging.case.overrides import load_overrides
        from aclcheck.running.calls import RunOptions

        overrides = load_overrides(self.tolerances) if self.tolerances else None
        return RunOptions(
            judge=JudgeOptions(standards=self.standard_names, overrides=overrides,
                               accumulate=self.accumulate,
                               overflow_mode=self.overflow_mode),
            isolate=self.isolate, timeout=self.timeout, spin_all=self.spin_rule == "all",
            repeat=self.repeat,
            deterministic=self.deterministic,
            # stored results are one answer per case: nothing to call twice
            recall=self.stale_check is not False and self.results is None,
            memory_limit=self.memory_limit * 2**20 if self.memory_limit else None,
        )

    # -- the repro line

    def repro_args(self) -> list[str]:
        """`aclcheck verify GOLDEN` and every verdict-changing option that differs from
        its default, in field order (no case filter: see `repro`)."""
        args = ["aclcheck", "verify", self.golden]
        for f in fields(self):
            carried = f.metadata["repro"]
            if f.name == "golden" or not carried:
                continue
            if carried == ACLNN_ONLY and self.impl != "aclnn":
                continue
            if f.name == "impl" and self.results is not None:
                continue  # --results replaces --impl
            default = None if f.name == "impl" else _default(f)  # always name the impl
            args += _flag_args(f.metadata["flag"], getattr(self, f.name), default)
        return args

    def repro(self, case_id: str, after: str | None = None) -> str:
        """The shell command that reruns exactly this case with the same options
        (`shlex.join` of repro_args() and `--id ID`; the options' part is joined once
        per config: a run asks for every case's line). `after`: the case is called right
        after this predecessor (--after; aclcheck.running.sequences)."""
        head = self._repro_head
        if after is not None and self.after is None:
            head += f" {o.AFTER.flag} {shlex.quote(after)}"
        return f"{head} --id {shlex.quote(glob.escape(case_id))}"

    @cached_property
    def _repro_head(self) -> str:
        return shlex.join(self.repro_args())


def _default(f: Any) -> Any:
    """A field's default (None for a required field)."""
    return None if f.default is MISSING else f.default


def _flag_args(flag: str, value: Any, default: Any) -> list[str]:
    """The command-line words that give `flag` this value ([] for the default)."""
    if value == default or value is None:
        return []
    if isinstance(value, bool):  # a flag, or an on/off switch off its default
        return [flag] if value else ["--no-" + flag.removeprefix("--")]
    if isinstance(value, tuple):
        return [word for item in value for word in (flag, str(item))]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return [flag, str(value)]

"""The configuration of one `aclcheck verify` run, as plain data.

One frozen dataclass holds every option of a run. The CLI builds it from its grouped
options, the pytest plugin from its own, a script or another command directly:

    cfg = VerifyConfig(golden="suite.h5", impl="torch", isolate=True, timeout=10)
    cfg.run_options()          # what aclcheck.running.runner needs
    cfg.repro("a2-fp32-...")   # the command that reruns one case with the same verdict

Every field says in its metadata whether it can change a case's verdict (`repro`). The
repro line is generated from exactly those fields, so an option added here cannot be left
out of it; tests/test_verify_cli.py checks that every option of `aclcheck verify` is a
field of this class. Nothing here imports click or rich.
"""

from __future__ import annotations

import glob
import shlex
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aclcheck.running.runner import RunOptions

#: metadata value of fields that change verdicts only for --impl aclnn (the product of
#: the device: a single --product names it)
ACLNN_ONLY = "aclnn"


def _opt(default: Any, flag: str | None, repro: bool | str, doc: str) -> Any:
    """A field with its CLI flag, whether the repro line carries it, and what it means
    (default MISSING: a required field)."""
    return field(default=default, metadata={"flag": flag, "repro": repro, "doc": doc})


@dataclass(frozen=True)
class VerifyConfig:
    """Every option of a verify run (see `aclcheck verify --help` for each flag)."""

    # -- what is judged
    golden: str = _opt(MISSING, None, True, "golden file (positional)")
    impl: str = _opt("reference", "--impl", True, "implementation spec")
    results: str | None = _opt(None, "--results", True, "stored outputs instead of --impl")
    aclnn_lib_dirs: tuple[str, ...] = _opt((), "--aclnn-lib-dir", True,
                                           "aclnn library folders")
    aclnn_device: int | None = _opt(None, "--aclnn-device", True, "aclnn device id")
    # -- which cases (selection filters; the repro names the case by --id instead)
    products: tuple[str, ...] = _opt((), "--product", ACLNN_ONLY, "only these products")
    dtypes: tuple[str, ...] = _opt((), "--dtype", False, "only these dtypes")
    formats: tuple[str, ...] = _opt((), "--format", False, "only these formats")
    families: tuple[str, ...] = _opt((), "--family", False,
                                     "only these families ('!name' excludes one)")
    ids: tuple[str, ...] = _opt((), "--id", False, "only ids matching one of these globs")
    shard: str | None = _opt(None, "--shard", False, "K/N slice of the selection")
    # -- how numbers are judged
    standards: tuple[str, ...] = _opt((), "--standard", True,
                                      "standards, the first gates (empty: the default)")
    tolerances: str | None = _opt(None, "--tolerances", True, "standard overrides (TOML)")
    accumulate: str | None = _opt(None, "--accumulate", True, "assumed accumulation")
    xfail: str | None = _opt(None, "--xfail", True, "known-failure list (TOML)")
    strict_xfail: bool = _opt(False, "--strict-xfail", True, "XPASS fails the gate")
    # -- how calls run
    isolate: bool | None = _opt(None, "--isolate", True,
                                "calls in a worker process (None: where fork-safe)")
    timeout: float = _opt(60.0, "--timeout", True, "seconds per call in a worker")
    memory_limit: int | None = _opt(None, "--memory-limit", True,
                                    "worker address-space cap in MB")
    repeat: int = _opt(1, "--repeat", True, "runs per case, compared bitwise")
    deterministic: bool = _opt(False, "--deterministic", True, "deterministic mode")
    jobs: int = _opt(1, "--jobs", False, "local worker processes")
    executor: str | None = _opt(None, "--executor", False, "dask://HOST:PORT")
    # -- what is reported
    baseline: str | None = _opt(None, "--baseline", False, "previous JSON report")
    verbose: bool = _opt(False, "--verbose", False, "show every case")
    width: int | None = _opt(None, "--width", False, "console width in columns")
    json_path: str | None = _opt(None, "--json", False, "JSON report path")
    junit_path: str | None = _opt(None, "--junit", False, "JUnit XML path")
    html_path: str | None = _opt(None, "--html", False, "HTML report path")

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
        from aclcheck.judging.standards import DEFAULT_STANDARD

        return tuple(dict.fromkeys(self.standards or (DEFAULT_STANDARD,)))

    def selection(self) -> dict[str, Any]:
        """Keyword arguments of aclcheck.suite.filters.select."""
        return {"products": self.products, "dtypes": self.dtypes, "formats": self.formats,
                "families": self.families, "id_pattern": self.ids or None}

    def run_options(self) -> RunOptions:
        """What the runner needs (reads the tolerance file, if any)."""
        from aclcheck.judging.judge import JudgeOptions
        from aclcheck.judging.standards import load_overrides
        from aclcheck.running.runner import RunOptions

        overrides = load_overrides(self.tolerances) if self.tolerances else None
        return RunOptions(
            judge=JudgeOptions(standards=self.standard_names, overrides=overrides,
                               accumulate=self.accumulate),
            isolate=self.isolate, timeout=self.timeout, repeat=self.repeat,
            deterministic=self.deterministic,
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

    def repro(self, case_id: str) -> str:
        """The shell command that reruns exactly this case with the same options."""
        return shlex.join([*self.repro_args(), "--id", glob.escape(case_id)])


def _default(f: Any) -> Any:
    """A field's default (None for a required field)."""
    return None if f.default is MISSING else f.default


def _flag_args(flag: str, value: Any, default: Any) -> list[str]:
    """The command-line words that give `flag` this value ([] for the default)."""
    if value == default or value is None:
        return []
    if isinstance(value, bool):  # an on/off switch whose default is None says which
        if default is None:
            return [flag] if value else ["--no-" + flag.removeprefix("--")]
        return [flag] if value else []
    if isinstance(value, tuple):
        return [word for item in value for word in (flag, str(item))]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return [flag, str(value)]

"""Every option of the commands that run cases, declared once: its flag, default, help,
what it means, whether the repro line carries it, and which commands take it.

The declarations feed click (aclcheck.cli.options), the pytest plugin's `--aclcheck-*`
options and the fields of VerifyConfig (aclcheck.running.config), so a default is
written once (TIMEOUT_S, MAX_TIME_S, ...) and a flag cannot mean two things. Options of
one command only (generate's, shrink's --append, hunt's --seed) stay on that command.

Standard library only: the pytest plugin imports this module in every pytest run.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from enum import StrEnum
from typing import Any

#: seconds one call may take in a worker (--timeout)
TIMEOUT_S = 60.0
#: seconds a search may take (--max-time of shrink and hunt)
MAX_TIME_S = 60.0
#: the operator of a command that names none (every command line of before --op)
DEFAULT_OPERATOR = "adaptive_avg_pool2d_backward"
#: the standard that gates when none is named
DEFAULT_STANDARD = "aclcheck"
#: what --accumulate takes besides a dtype ("input": the input dtype)
ACCUMULATE_CHOICES: tuple[str, ...] = ("float32", "input", "float16", "bfloat16")
#: `repro` value of options that change verdicts only for --impl aclnn (the product of
#: the device: a single --product names it)
ACLNN_ONLY = "aclnn"

VERIFY, SHRINK, HUNT, PLUGIN, INSPECT, EXPORT = (
    "verify", "shrink", "hunt", "plugin", "inspect", "export")
GENERATE, PRODUCTS_CMD, TOLERANCES_CMD = "generate", "products", "tolerances"
FAMILIES_CMD, IMPORT_CASES = "families", "import-cases"
#: the commands that select cases of a golden file with the same filters
SELECTING = frozenset({VERIFY, INSPECT, EXPORT})
#: the commands that judge calls (and the plugin, which judges a golden file's)
JUDGING = frozenset({VERIFY, SHRINK, HUNT, PLUGIN})
LIVE = frozenset({VERIFY, SHRINK, HUNT})


class Predecessor(StrEnum):
    """The call the sequence stage makes right before a case (aclcheck.running.sequences;
    --after): its kinds, in the order the stage tries them."""

    OTHER_DTYPE = "other-dtype"  # the same shapes and layout in another float dtype
    OTHER_SELF = "other-self"  # the same gradOutput, self one smaller (larger where 1)
    LARGER = "larger"  # the same dtype, every spatial size of self doubled
    FP16_SUBNORMALS = "fp16-subnormals"  # FLOAT16 subnormal values (non-FLOAT16 cases)


class Kind(StrEnum):
    TEXT = "text"
    FILE = "file"  # a path to a file (not a folder)
    DIR = "dir"  # a path to a folder
    INT = "int"
    FLOAT = "float"
    FLAG = "flag"  # on when given
    SWITCH = "switch"  # --x / --no-x, None when neither is given
    CHOICE = "choice"


@dataclass(frozen=True)
class Option:
    """One option of the commands that run cases."""

    field: str | None  # its VerifyConfig field (None: not part of a verify run)
    flag: str  # "--timeout"
    default: Any
    help: str
    doc: str  # one line: what the value is (VerifyConfig's field metadata)
    kind: Kind = Kind.TEXT
    multiple: bool = False
    dest: str | None = None  # the click parameter's name where it is not the field's
    short: str | None = None  # "-v"
    metavar: str | None = None
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    show_default: bool = False
    repro: bool | str = False  # True, False or ACLNN_ONLY: the repro line carries it
    commands: frozenset[str] = frozenset({VERIFY})

    @property
    def name(self) -> str:
        """The parameter name click gives the option's value."""
        return self.dest or self.field or self.flag.removeprefix("--").replace("-", "_")


def config_field(option: Option) -> Any:
    """The dataclasses.field of VerifyConfig for an option: its default and the metadata
    {"flag", "repro", "doc", "option"} (the repro line and the tests read the first three)."""
    return field(default=option.default,
                 metadata={"flag": option.flag, "repro": option.repro, "doc": option.doc,
                           "option": option})


def required_field(doc: str) -> Any:
    """A VerifyConfig field without a flag or a default (the golden file: positional)."""
    return field(default=MISSING, metadata={"flag": None, "repro": True, "doc": doc,
                                            "option": None})


# -- what is judged --------------------------------------------------------------------------

IMPL = Option(
    "impl", "--impl", "reference", kind=Kind.TEXT, metavar="NAME", show_default=True,
    repro=True, commands=JUDGING, doc="implementation spec",
    help="Implementation: reference, torch[:cpu|cuda|npu], mindspore[:cpu|gpu|ascend], "
         "paddle[:cpu|gpu|npu|DEVICE], module:function, or a plugin name (see `aclcheck "
         "impls`).")
RESULTS = Option(
    "results", "--results", None, kind=Kind.FILE, repro=True,
    doc="stored outputs instead of --impl",
    help="Judge stored outputs (results layout) instead of running --impl.")

# -- which cases (the repro line names the case by --id instead) ---------------------------

PRODUCTS = Option(
    "products", "--product", (), multiple=True, dest="product", metavar="NAME",
    repro=ACLNN_ONLY, commands=SELECTING, doc="only these products",
    help="Only this product (repeatable).")
DTYPES = Option(
    "dtypes", "--dtype", (), multiple=True, dest="dtype", metavar="NAME", commands=SELECTING,
    doc="only these dtypes", help="Only this dtype (repeatable).")
FORMATS = Option(
    "formats", "--format", (), multiple=True, dest="format_", metavar="NAME",
    commands=SELECTING, doc="only these formats", help="Only this format (repeatable).")
FAMILIES = Option(
    "families", "--family", (), multiple=True, dest="family", metavar="NAME",
    commands=SELECTING, doc="only these families ('!name' excludes one)",
    help="Only this family (repeatable); '!NAME' leaves a family out (--family '!invalid').")
IDS = Option(
    "ids", "--id", (), multiple=True, dest="id_pattern", metavar="GLOB", commands=SELECTING,
    doc="only ids matching one of these globs",
    help="Only case ids matching this glob pattern (repeatable: any).")
SHARD = Option(
    "shard", "--shard", None, metavar="K/N", doc="K/N slice of the selection",
    help="Only the K-th of N size-balanced slices of the selection (CI matrices; join the "
         "JSON reports with `aclcheck merge`).")

# -- how numbers are judged ----------------------------------------------------------------

STANDARDS = Option(
    "standards", "--standard", (), multiple=True, metavar="NAME", repro=True,
    commands=JUDGING, doc="standards, the first gates (empty: the default)",
    help="Tolerance standard (repeatable: the first gates, the others are shown beside it). "
         f"Default: {DEFAULT_STANDARD}. See `aclcheck tolerances`.")
TOLERANCES = Option(
    "tolerances", "--tolerances", None, kind=Kind.FILE, repro=True, commands=JUDGING,
    doc="standard overrides (TOML)",
    help="TOML file overriding standard parameters per dtype / product.")
ACCUMULATE = Option(
    "accumulate", "--accumulate", None, kind=Kind.CHOICE, choices=ACCUMULATE_CHOICES,
    repro=True, commands=LIVE, doc="assumed accumulation",
    help="Override the accumulation the error budget assumes ('input' = the input dtype, as "
         "the Atlas training/inference path).")
OVERFLOW_MODE = Option(
    "overflow_mode", "--overflow-mode", None, kind=Kind.CHOICE,
    choices=("inf-nan", "saturation"), repro=True, commands=frozenset({VERIFY, PLUGIN}),
    doc="overflow mode of special values (None: each product's default)",
    help="Judge special values in this overflow mode where the product offers it. "
         "Default: each product's own (Atlas A2/A3: inf-nan; Atlas training/inference: "
         "saturation, their only mode). See docs/contract.md section 10.")
XFAIL = Option(
    "xfail", "--xfail", None, kind=Kind.FILE, repro=True, commands=frozenset({VERIFY, PLUGIN}),
    doc="known-failure list (TOML)",
    help="Known-failure list (TOML): listed failures are XFAIL and do not fail the gate.")
STRICT_XFAIL = Option(
    "strict_xfail", "--strict-xfail", False, kind=Kind.FLAG, repro=True,
    commands=frozenset({VERIFY, PLUGIN}), doc="XPASS fails the gate",
    help="A listed case that now passes (XPASS) fails the gate.")

# -- how calls run ---------------------------------------------------------------------------

ISOLATE = Option(
    "isolate", "--isolate", None, kind=Kind.SWITCH, repro=True, commands=JUDGING,
    doc="calls in a worker process (None: where fork-safe)",
    help="Run the implementation in a worker process: crashes, hangs and exits become ERROR "
         "and the run goes on. Default: on for fork-safe adapters (reference, torch:cpu, CPU "
         "frameworks, module:function), off for device adapters. --no-isolate runs it in "
         "this process (debuggers).")
TIMEOUT = Option(
    "timeout", "--timeout", TIMEOUT_S, kind=Kind.FLOAT, minimum=0.1, show_default=True,
    repro=True, commands=JUDGING, doc="seconds per call in a worker",
    help="Hard cap in seconds per call in a worker. A call is declared hung sooner when it "
         "is blocked (no CPU, 50x the wall time of comparable calls, at least 5 s; set aside "
         "while the run goes on) or, for a call the contract rejects, when it spins (more "
         "than 10x the CPU time of comparable calls, at least 0.5 s; see --spin-rule). A "
         "valid call that keeps computing runs to this cap (docs/verify.md).")
SPIN_RULE = Option(
    "spin_rule", "--spin-rule", "rejected", kind=Kind.CHOICE, choices=("rejected", "all"),
    show_default=True, repro=True, commands=JUDGING,
    doc="calls the CPU (spinning) rule may end before --timeout",
    help="Which calls that keep using CPU may be declared hung before --timeout: "
         "'rejected' (default), only calls the contract rejects (PyTorch CPU spins on some "
         "of those); 'all', every call (a fast run, but a correct slow kernel's large calls "
         "become ERROR). Blocked calls (no CPU used) are hung at their wall allowance "
         "either way.")
MEMORY_LIMIT = Option(
    "memory_limit", "--memory-limit", None, kind=Kind.INT, minimum=64, metavar="MB",
    repro=True, doc="worker address-space cap in MB",
    help="Address-space cap of the isolated worker: a runaway allocation becomes ERROR "
         "instead of exhausting the machine (needs isolation).")
REPEAT = Option(
    "repeat", "--repeat", 1, kind=Kind.INT, minimum=1, show_default=True, repro=True,
    doc="runs per case, compared bitwise",
    help="Run each case N times and compare the outputs bitwise.")
DETERMINISTIC = Option(
    "deterministic", "--deterministic", False, kind=Kind.FLAG, repro=True,
    doc="deterministic mode",
    help="Ask the implementation for deterministic mode; with --repeat, any difference is "
         "NONDETERMINISTIC.")
STALE_CHECK = Option(
    "stale_check", "--stale-check", True, kind=Kind.SWITCH, repro=True,
    commands=frozenset({VERIFY, PLUGIN}), doc="call each valid case twice, judge both",
    help="Call each valid case a second time in the same worker, right after a different "
         "call (its twin: negated values, another memory layout), and judge both answers: "
         "one right and one wrong is reported as 'depends on earlier calls' (state kept "
         "between calls). On by default; --no-stale-check halves the calls.")
JOBS = Option(
    "jobs", "--jobs", 1, kind=Kind.INT, minimum=1, show_default=True,
    doc="local worker processes", help="Run cases on N local worker processes.")
EXECUTOR = Option(
    "executor", "--executor", None, metavar="URL", doc="dask://HOST:PORT or dask-local:N",
    help="Fan cases out over a Dask cluster: dask://HOST:PORT (a running scheduler), or "
         "dask-local:N (N worker processes on this machine, started and stopped here; "
         "docs/campaign.md).")
PROBE = Option(
    "probe", "--probe", True, kind=Kind.SWITCH, doc="measure the kernel's M on failures",
    help="When cases FAIL, measure the kernel's own windows, weights and plane mapping on "
         "one-hot values of the input it is linear in (extra calls, within --probe-budget) "
         "and lead the diagnosis with the difference from the contract (docs/diagnosis.md). "
         "Never changes a verdict. On by default.")
PROBE_BUDGET = Option(
    "probe_budget", "--probe-budget", 200, kind=Kind.INT, minimum=0, metavar="N",
    show_default=True, doc="calls the probe may make",
    help="Calls the measuring probe may make in all (a few failing shapes, smallest first).")
SEQUENCES = Option(
    "sequences", "--sequences", 8, kind=Kind.INT, minimum=0, metavar="N", show_default=True,
    repro=True, doc="valid cases called again after a chosen predecessor",
    help="Call N valid cases (a deterministic sample, the most unlike first) again after a "
         "chosen different call in the same worker (another dtype, another self, a larger "
         "call, FLOAT16 subnormals) and judge that answer too: right alone and wrong after "
         "it is reported as 'depends on earlier calls', with a repro naming the call "
         "(--after). 0 turns it off (docs/verify.md, 'Call sequences').")
AFTER = Option(
    "after", "--after", None, kind=Kind.CHOICE, choices=tuple(k.value for k in Predecessor),
    metavar="KIND", repro=True, doc="call each selected case right after this predecessor",
    help="Call each selected case right after its predecessor of this kind (other-dtype, "
         "other-self, larger, fp16-subnormals), before the run, and judge that answer too: "
         "the repro of a 'depends on earlier calls' the sequence stage found. Use with --id.")
MAX_TIME = Option(
    None, "--max-time", MAX_TIME_S, kind=Kind.FLOAT, minimum=0.0, metavar="S",
    show_default=True, commands=frozenset({SHRINK, HUNT}), doc="seconds of the search",
    help="Time limit of the search.")

# -- what is reported ------------------------------------------------------------------------

BASELINE = Option(
    "baseline", "--baseline", None, kind=Kind.FILE, doc="previous JSON report",
    help="Previous JSON report: show new failures, fixed cases and metric regressions; the "
         "gate then fails only on new failures.")
VERBOSE = Option(
    "verbose", "--verbose", False, kind=Kind.FLAG, short="-v", doc="show every case",
    help="Show every case, and the details of every nonconforming one (without -v: the "
         "first 20).")
WIDTH = Option(
    "width", "--width", None, kind=Kind.INT, minimum=40, metavar="COLUMNS",
    doc="console width in columns",
    help="Console width (default: the terminal's; 160 in logs and pipes).")
JSON = Option(
    "json_path", "--json", None, kind=Kind.FILE, doc="JSON report path",
    help="Write the JSON report here.")
JUNIT = Option(
    "junit_path", "--junit", None, kind=Kind.FILE, doc="JUnit XML path",
    help="Write JUnit XML here.")
HTML = Option(
    "html_path", "--html", None, kind=Kind.FILE, doc="HTML report path",
    help="Write the HTML report here: summary, case table, and every non-passing case with "
         "pictures of where its errors sit (docs/report.md).")

# -- which operator (commands that make cases; those that read a golden file take it
#    from the file) -----------------------------------------------------------------------

OP = Option(
    None, "--op", DEFAULT_OPERATOR, metavar="NAME", show_default=True, doc="operator",
    commands=frozenset({GENERATE, PRODUCTS_CMD, TOLERANCES_CMD, FAMILIES_CMD, HUNT,
                        IMPORT_CASES}),
    help="Operator, by name or alias (`aclcheck ops` lists them).")

#: The options that run cases, in the order commands list them (the aclnn adapter's own
#: options, aclcheck.impls.aclnn_options, follow --results on verify).
IMPLEMENTATION: tuple[Option, ...] = (IMPL, RESULTS)
SELECTION: tuple[Option, ...] = (PRODUCTS, DTYPES, FORMATS, FAMILIES, IDS)
JUDGEMENT: tuple[Option, ...] = (STANDARDS, TOLERANCES, ACCUMULATE, OVERFLOW_MODE, XFAIL,
                                 STRICT_XFAIL)
RUNNING: tuple[Option, ...] = (ISOLATE, TIMEOUT, SPIN_RULE, MEMORY_LIMIT, REPEAT, DETERMINISTIC,
                               STALE_CHECK, SEQUENCES, AFTER, SHARD, JOBS, EXECUTOR, PROBE,
                               PROBE_BUDGET, MAX_TIME)
REPORTING: tuple[Option, ...] = (BASELINE, VERBOSE, WIDTH, JSON, JUNIT, HTML)

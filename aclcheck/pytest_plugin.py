"""pytest plugin: a golden file's cases as pytest items, so a CI gate gets -k, -x,
--junitxml, -n (pytest-xdist) and pytest's reporting for free.

    pytest --aclcheck-golden suite.h5 --aclcheck-impl torch [--aclcheck-xfail known.toml]

Registered through the `pytest11` entry point, so it loads in every pytest run of an
environment where aclcheck is installed: without --aclcheck-golden it only adds its
options (this module imports nothing of aclcheck, numpy or h5py at import time).

One item per case, named exactly by the case id, under a collector node for the golden
file, in golden index order. Each process (every xdist worker) opens the golden file
read-only and builds the adapter once. A failing item's message is what `aclcheck
verify` prints for the case; known failures become xfail marks with pytest's own
XFAIL/XPASS semantics.

The gate's rules are verify's: the adapter is loaded as verify loads it (isolated calls:
only in worker processes; a module that exits, raises or blocks while imported is a
usage error), and a session that judged no case (every case SKIP), whose golden file
changed meanwhile, or whose known-failure list has an entry matching every case under
--aclcheck-strict-xfail (a warning otherwise) fails, with a line saying why.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aclcheck import options as o
from aclcheck.options import Kind, Option

if TYPE_CHECKING:
    from aclcheck.cases.call import Capabilities
    from aclcheck.impls.base import Implementation
    from aclcheck.judging.case.verdicts import CaseVerdict
    from aclcheck.judging.gate.gate import Gate
    from aclcheck.judging.gate.xfail import XfailEntry, XfailList
    from aclcheck.running.calls import CaseRunner, RunOptions
    from aclcheck.store.dispatch import GoldenFile
    from aclcheck.store.index import IndexEntry

PLUGIN_NAME = "aclcheck-gate"
#: options that mean nothing without --aclcheck-golden
_DEPENDENT = ("aclcheck_standard", "aclcheck_tolerances", "aclcheck_xfail")


class AclcheckMistrustedWarning(UserWarning):
    """A case passed but cannot discriminate (its golden is all zeros)."""


class CaseFailure(Exception):
    """A nonconforming case; `text` is what `aclcheck verify` prints for it."""

    def __init__(self, verdict: CaseVerdict) -> None:
        super().__init__(f"{verdict.case_id}: {verdict.verdict.value}: {verdict.message}")
        self.verdict = verdict
        self.text = failure_text(verdict)


class KnownFailure(CaseFailure):
    """A nonconforming case the known-failure list expects (the xfail mark's `raises`)."""


def failure_text(v: CaseVerdict) -> str:
    """The failing-case block of verify's console report, as plain text (pytest's
    section header already names the case, so the first line is verdict and message:
    it is also what pytest's short summary shows). Control characters are escaped."""
    lines = [f"{v.verdict.value}: {v.message}"]
    if v.detail:
        lines.append(v.detail.rstrip("\n"))
    lines += [f"note: {note}" for note in v.notes]
    if v.repro:
        lines.append(f"repro: {v.repro}")
    from aclcheck.report.safe_text import printable

    return printable("\n".join(lines))  # control characters shown, never sent raw


# -- options and activation ------------------------------------------------------------------


def plugin_options() -> tuple[Option, ...]:
    """The options of `aclcheck verify` the plugin takes, as `--aclcheck-*`."""
    return tuple(opt for opt in (*o.IMPLEMENTATION, *o.JUDGEMENT, *o.RUNNING)
                 if o.PLUGIN in opt.commands)


def _dest(opt: Option) -> str:
    return "aclcheck_" + opt.flag.removeprefix("--").replace("-", "_")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aclcheck", "aclcheck conformance gate (one test per case)")
    group.addoption("--aclcheck-golden", metavar="FILE", default=None,
                    help="Golden file whose cases become test items (enables the plugin).")
    for opt in plugin_options():  # one declaration each, shared with `aclcheck verify`
        flag, dest = "--aclcheck-" + opt.flag.removeprefix("--"), _dest(opt)
        default = "" if opt.default in (None, False, ()) else f" (default: {opt.default:g})" \
            if isinstance(opt.default, float) else f" (default: {opt.default})"
        if opt.kind == Kind.FLAG:
            group.addoption(flag, dest=dest, action="store_true", default=False, help=opt.help)
        elif opt.kind == Kind.SWITCH:
            group.addoption(flag, dest=dest, action="store_true", default=None, help=opt.help)
            group.addoption("--aclcheck-no-" + opt.flag.removeprefix("--"), dest=dest,
                            action="store_false", help=f"The opposite of {flag}.")
        else:
            metavar = opt.metavar or ("S" if opt.kind == Kind.FLOAT else "FILE")
            group.addoption(flag, dest=dest, metavar=metavar,
                            action="append" if opt.multiple else "store",
                            type=float if opt.kind == Kind.FLOAT else None,
                            default=None if opt.multiple else opt.default,
                            help=opt.help + default)


def pytest_configure(config: pytest.Config) -> None:
    golden = config.getoption("aclcheck_golden")
    if golden is None:
        for name in _DEPENDENT:
            if config.getoption(name):
                flag = "--" + name.replace("_", "-")
                raise pytest.UsageError(f"{flag} needs --aclcheck-golden FILE")
        return
    gate = GoldenGate(config, golden)
    config.pluginmanager.register(gate, PLUGIN_NAME)
    # Collect the golden file like a path on the command line: pytest's own collection
    # (reports, counts, -k/-m, --collect-only, --lf) then covers it. Without positional
    # arguments it is the only thing collected, not the rootdir or `testpaths`.
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.append(str(gate.path))
    else:
        config.args[:] = [str(gate.path)]


# -- per-process state -----------------------------------------------------------------------


class GoldenGate:
    """Per-process state (open golden file, adapter, executor) and the active hooks."""

    def __init__(self, config: pytest.Config, golden: str) -> None:
        from aclcheck.errors import AclcheckError

        try:
            self._setup(config, golden)
        except AclcheckError as exc:  # the plugin's one mapping of aclcheck's errors
            named = f"--aclcheck-{exc.option.removeprefix('--')}: " if exc.option else ""
            raise pytest.UsageError(named + str(exc)) from None

    def _setup(self, config: pytest.Config, golden: str) -> None:
        from aclcheck.cases.call import Capabilities
        from aclcheck.errors import AclcheckError, UsageError
        from aclcheck.judging.gate import xfail
        from aclcheck.running.config import VerifyConfig
        from aclcheck.running.workers.adapter import open_impl
        from aclcheck.store.dispatch import open_golden
        from aclcheck.store.file_guard import Role, Snapshot, check_apart

        self.config = config
        self.path = (config.invocation_params.dir / golden).resolve()
        #: the golden file is read case by case: it must not change meanwhile
        self.watch = Snapshot([Role("--aclcheck-golden", self.path)])
        outputs = [Role(flag, config.invocation_params.dir / path)
                   for flag, path in (("--junitxml", getattr(config.option, "xmlpath", None)),
                                      ("--html", getattr(config.option, "htmlpath", None)))
                   if isinstance(path, str) and path]
        # pytest's own reports never replace the golden file either
        check_apart([Role("--aclcheck-golden", self.path)], outputs)
        #: (verdict, expected status) of the case items run in this process (the
        #: controller's, with xdist: it sees every worker's reports)
        self.seen: dict[str, tuple[str, Any]] = {}
        self.lines: list[tuple[str, bool]] = []  # the gate's lines (failing or a warning)
        #: the same configuration `aclcheck verify` uses: run options and repro lines
        values: dict[str, Any] = {}
        for opt in plugin_options():
            value = config.getoption(_dest(opt))
            values[str(opt.field)] = tuple(value or ()) if opt.multiple else value
        self.verify_config = VerifyConfig(golden=golden, **values)
        self.spec: str = self.verify_config.impl
        self.strict: bool = self.verify_config.strict_xfail
        self.standards = self.verify_config.standard_names
        self.verify_config.check()
        self.opts: RunOptions = self.verify_config.run_options()
        xfail_path = self.verify_config.xfail
        self.xfails: XfailList | None = xfail.load_xfails(xfail_path) if xfail_path else None
        self.golden: GoldenFile = open_golden(self.path)
        try:
            self.opened = open_impl(self.spec, self.verify_config.isolate)
        except AclcheckError as exc:  # named by its option, as pytest shows it
            self.golden.close()
            raise UsageError(f"--aclcheck-impl {self.spec}: {exc}") from None
        self.impl: Implementation = self.opened.impl
        self.caps: Capabilities = Capabilities.of(self.impl)
        self._executor: CaseRunner | None = None

    @property
    def executor(self) -> CaseRunner:
        """The runner's executor, built on first use (an isolated worker starts lazily);
        it owns the zygote from then on."""
        if self._executor is None:
            from aclcheck.running.calls import CaseRunner

            self._executor = CaseRunner(self.impl, self.opts, zygote=self.opened.zygote)
            self.opened.zygote = None
        return self._executor

    def run(self, case_id: str, position: int) -> CaseVerdict:
        from dataclasses import replace

        from aclcheck.running.runner import run_case

        verdict = run_case(self.executor, self.golden.data(case_id), self.caps)
        return replace(verdict, index=position, repro=self.verify_config.repro(case_id))

    def known(self, case_id: str) -> XfailEntry | None:
        return self.xfails.combined(case_id, self.impl.name) if self.xfails else None

    def nodeid(self, session: pytest.Session) -> str:
        """The golden file's node id: relative to rootdir, else its name (same in every
        xdist worker, which is all that matters)."""
        try:
            return self.path.relative_to(session.config.rootpath).as_posix()
        except ValueError:
            return self.path.name

    # -- hooks

    def pytest_report_header(self) -> str:
        from aclcheck.report.safe_text import printable

        xfails = f", known failures {self.xfails.source}" if self.xfails else ""
        where = ("calls in worker processes" if self.opened.isolated else
                 "calls in this process: for debugging, a gate needs isolated calls")
        return printable(f"aclcheck: {self.path} ({len(self.golden.index)} cases), "
                         f"impl {self.impl.name} ({where}), standard "
                         f"{', '.join(self.standards)}{xfails}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        verdict = props.get("aclcheck_verdict")
        if report.when == "call" and isinstance(verdict, str):
            self.seen[report.nodeid] = (verdict, props.get("aclcheck_expected_status"))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The gate rules verify has beyond each case's own verdict (not in xdist
        workers: the controller sees every case's report)."""
        if hasattr(session.config, "workerinput") or session.config.option.collectonly:
            return
        from aclcheck.judging.gate.gate import Gate
        from aclcheck.report.console import gate_lines

        gate = self.gate()
        self.lines = [(line, True) for line in gate_lines(Gate(True, gate.findings))]
        self.lines += [(line, False) for line in gate_lines(Gate(False, (), gate.warnings))]
        if gate.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def gate(self) -> Gate:
        """The session's gate from the case reports seen (pytest judges each case)."""
        from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
        from aclcheck.judging.gate.gate import GateFinding, GateKind, catch_all, decide

        verdicts = [CaseVerdict(nodeid.rpartition("::")[2], Verdict(value), "",
                                expected_status=status)
                    for nodeid, (value, status) in self.seen.items()
                    if value in Verdict.__members__]
        entries = (catch_all(self.xfails.entries, verdicts, self.impl.name)
                   if self.xfails is not None else ())
        problems = [GateFinding(GateKind.INPUT_CHANGED, detail=f"{r.flag} {r.path}")
                    for r in self.watch.changed()]
        return decide(verdicts, strict_xfail=self.strict, failing=[],
                      catch_all_entries=entries, problems=problems)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line, failing in self.lines:
            terminalreporter.write_line(line, red=failing, yellow=not failing)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector
                            ) -> pytest.Collector | None:
        if file_path.resolve() != self.path:
            return None
        return GoldenCollector.from_parent(parent, path=file_path,
                                           nodeid=self.nodeid(parent.session))

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outside the skipping plugin's wrapper
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        rep = yield
        if not isinstance(item, CaseItem) or item.entry is None or call.when != "call":
            return rep
        entry, where = item.entry, self.xfails.source if self.xfails else ""
        if rep.skipped and hasattr(rep, "wasxfail") and call.excinfo is not None \
                and isinstance(call.excinfo.value, KnownFailure):
            v = call.excinfo.value.verdict
            rep.wasxfail = f"{entry.reason} (was {v.verdict.value}: {v.message})"
        elif rep.passed and hasattr(rep, "wasxfail"):
            rep.wasxfail = (f"listed in {where} ({entry.reason}) but passed: "
                            "remove it from the list")
        elif rep.failed and isinstance(rep.longrepr, str) \
                and rep.longrepr.startswith("[XPASS(strict)]"):
            rep.longrepr = (f"[XPASS(strict)] listed in {where} "
                            f"({entry.reason}) but passed: remove it from the list")
        return rep

    def pytest_unconfigure(self) -> None:
        try:
            if self._executor is not None:
                self._executor.close()
            self.opened.close()
        finally:
            self.golden.close()


def _gate(config: pytest.Config) -> GoldenGate:
    gate = config.pluginmanager.get_plugin(PLUGIN_NAME)
    assert isinstance(gate, GoldenGate)
    return gate


# -- nodes ------------------------------------------------------------------------------------


class GoldenCollector(pytest.File):
    """The golden file: one CaseItem per /index row, in index order."""

    def collect(self) -> Iterator[CaseItem]:
        gate = _gate(self.config)
        for position, entry in enumerate(gate.golden.index):
            yield CaseItem.from_parent(self, name=entry.id, index_entry=entry,
                                       position=position)


class CaseItem(pytest.Item):
    """One golden case; passes, skips, fails with verify's text, or is a known failure."""

    def __init__(self, *, index_entry: IndexEntry, position: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.index_entry = index_entry
        self.position = position
        for word in (index_entry.product, index_entry.dtype, index_entry.format,
                     index_entry.family):
            self.extra_keyword_matches.add(word)
        gate = _gate(self.config)
        self.entry = gate.known(self.name)
        if self.entry is not None:
            self.add_marker(pytest.mark.xfail(reason=self.entry.reason,
                                              strict=gate.strict and not self.entry.may_pass,
                                              raises=KnownFailure))

    def runtest(self) -> None:
        from aclcheck.judging.case.verdicts import Verdict

        v = _gate(self.config).run(self.name, self.position)
        self.user_properties.append(("aclcheck_verdict", v.verdict.value))
        self.user_properties.append(("aclcheck_expected_status", v.expected_status))
        if v.verdict == Verdict.SKIP:
            pytest.skip(v.message)
        if v.failing:
            listed = self.entry is not None and (not self.entry.verdicts
                                                 or v.verdict in self.entry.verdicts)
            raise (KnownFailure if listed else CaseFailure)(v)
        if v.verdict == Verdict.MISTRUSTED:
            warnings.warn(AclcheckMistrustedWarning(f"{v.case_id}: {v.message}"), stacklevel=1)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        from aclcheck.errors import AclcheckError

        if isinstance(excinfo.value, CaseFailure):
            return excinfo.value.text
        if isinstance(excinfo.value, AclcheckError):  # a damaged case in the golden file
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name

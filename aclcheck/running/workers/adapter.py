"""Parent side: opening a command's adapter, and the adapter as this process sees it when
its calls are isolated (a `WorkerAdapter`: plain data reported by the process that built
it, never the adapter object or its module).

`open_impl` decides, for `--impl SPEC` and `--[no-]isolate`:

  * isolated calls (the default for fork-safe adapters): the adapter is built only in
    the zygote and the workers; this process gets a `WorkerAdapter` (name, dtypes,
    products, status codes... as checked `AdapterInfo`) and never imports the module;
  * calls in this process (`--no-isolate`, device adapters by default): the adapter is
    built here. User code (`module:function`, plugins) is imported first in a zygote,
    where a module that exits, raises or blocks while imported is contained, and only
    then here, guarded against exits too.

Either way a module that cannot be loaded is a usage error with one line, never a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from aclcheck.cases.call import Outcome
from aclcheck.errors import ImplementationUnavailable, UnknownImplementation, UsageError
from aclcheck.impls.base import CallInputs, ExitAttempt, Implementation, exit_refused
from aclcheck.impls.registry import create, spec_kind, static_fork_safe
from aclcheck.running.integrity import compromised, exit_handlers
from aclcheck.running.workers import lifetime
from aclcheck.running.workers.wire import AdapterInfo
from aclcheck.running.workers.zygote import PreloadError, Zygote


class WorkerAdapter(Implementation):
    """An adapter that exists only in worker processes: its capabilities as data."""

    def __init__(self, spec: str, info: AdapterInfo) -> None:
        self.spec = spec
        self.info = info
        self.name = info.name
        self.description = info.description
        self.has_status_codes = info.has_status_codes
        self.models_products = info.models_products
        self.dtypes = info.dtypes
        self.products = info.products
        self.fork_safe = info.fork_safe

    def run(self, call: CallInputs) -> Outcome:
        raise RuntimeError(f"{self.name} runs in isolated workers only")


def trusted(spec: str, info: AdapterInfo) -> AdapterInfo:
    """What this process knows better than a worker: a module:function adapter is a
    plain callable (named by its spec, no status codes, no products, never declines)."""
    if spec_kind(spec) == "callable":
        return replace(info, name=spec, has_status_codes=False, models_products=False,
                       fork_safe=True, declines=False)
    return info


@dataclass
class OpenedImpl:
    """A command's adapter: `impl` (a WorkerAdapter when `isolated`), and the zygote its
    workers come from (the caller hands it to the runner, which closes it)."""

    impl: Implementation
    zygote: Zygote | None
    isolated: bool

    def close(self) -> None:
        try:
            self.impl.close()
        finally:
            if self.zygote is not None:
                self.zygote.close()


def load_error(spec: str, kind: str, text: str, allowance: float) -> Exception:
    """The usage error for an adapter that could not be loaded (one line)."""
    if kind == "UnknownImplementation":
        return UnknownImplementation(text)
    if kind == "ImplementationUnavailable":
        return ImplementationUnavailable(text, spec)
    if kind == "timeout":
        return UsageError(f"--impl {spec}: loading it did not finish within "
                          f"{allowance:g} s (does it block while imported?)")
    if kind == "exit":
        return UsageError(f"--impl {spec}: the process loading it {text} (a module must "
                          "not end the process while imported)")
    if kind in ("SystemExit", "ExitAttempt"):
        return UsageError(f"--impl {spec}: it tried to end the process while imported: "
                          f"{text}")
    return UsageError(f"--impl {spec}: cannot be loaded: {kind}: {text}")


def build_here(spec: str) -> Implementation:
    """The adapter, built in this process; a module that exits or raises while imported
    is a usage error (Unknown/Unavailable pass through for the caller to word). User code
    that registers exit handlers while imported marks the process compromised
    (aclcheck.running.integrity)."""
    handlers = exit_handlers()
    try:
        with exit_refused():
            impl = create(spec)
        if (exit_handlers() or 0) > (handlers or 0) and spec_kind(spec) != "builtin":
            compromised.append("exit handlers registered while the adapter was imported")
        return impl
    except (UnknownImplementation, ImplementationUnavailable):
        raise
    except (SystemExit, ExitAttempt) as exc:
        what = exc.args[0] if isinstance(exc, ExitAttempt) else f"sys.exit({exc.code!r})"
        raise load_error(spec, "SystemExit", str(what), 0) from None
    except Exception as exc:  # noqa: BLE001 - user code: one line, not a traceback
        raise load_error(spec, type(exc).__name__, " ".join(str(exc).split()), 0) from None


def _probe(zygote: Zygote, spec: str, allowance: float) -> AdapterInfo:
    """The zygote's report on the adapter it built; on failure it is closed and the
    failure raised as load_error."""
    try:
        value = zygote.ready(allowance)
        return trusted(spec, AdapterInfo.from_json(value))
    except PreloadError as exc:
        zygote.close()
        raise load_error(spec, exc.kind, exc.text, allowance) from None
    except ValueError as exc:
        zygote.close()
        raise load_error(spec, "protocol", f"its worker reported {exc}", allowance) from None


def _probe_worker(zygote: Zygote, spec: str, allowance: float) -> AdapterInfo:
    """What a first worker of an exec-mode zygote says of the adapter it built."""
    from aclcheck.running.workers.inflight import WorkerStartError
    from aclcheck.running.workers.parent import IsolatedRunner

    probe = IsolatedRunner(spec, timeout=allowance, zygote=zygote, start_allowance=allowance)
    try:
        info, _ = probe.describe()
        return trusted(spec, info)
    except WorkerStartError as exc:
        zygote.close()
        raise load_error(spec, exc.kind, exc.text, allowance) from None
    finally:
        probe.close()


def _zygote(start: object) -> Zygote:
    if start is None:
        raise UsageError("isolated calls need fork(), which this platform lacks: "
                         "use --no-isolate")
    return start  # type: ignore[return-value]


class StartingImpl:
    """An adapter being loaded: where it will live in a zygote (the default for fork-safe
    adapters), the zygote imports it from here on while the caller does other work (reads
    cases); `loaded()` says without waiting whether `open()` would not wait either.
    `opened`: what open() made (given: an adapter already open, stored results)."""

    def __init__(self, spec: str, isolate: bool | None, allowance: float | None = None,
                 *, opened: OpenedImpl | None = None) -> None:
        self.spec, self.isolate, self.allowance = spec, isolate, allowance
        self.opened = opened
        self.zygote: Zygote | None = None
        if opened is None and hasattr(os, "fork") and isolate is not False \
                and static_fork_safe(spec) is not False:
            self.zygote = lifetime.start_zygote(spec)

    def loaded(self) -> bool:
        return self.zygote is None or self.zygote.reported()

    def open(self) -> OpenedImpl:
        """The adapter, as open_impl makes it (waits for the zygote's import)."""
        if self.opened is None:
            zygote, self.zygote = self.zygote, None
            self.opened = open_impl(self.spec, self.isolate, self.allowance, started=zygote)
        return self.opened

    def close(self) -> None:
        """Close the adapter, or the zygote of one never opened (`opened` stays readable)."""
        try:
            if self.opened is not None:
                self.opened.close()
        finally:
            if self.zygote is not None:
                self.zygote.close()
                self.zygote = None


def open_impl(spec: str, isolate: bool | None, allowance: float | None = None, *,
              started: Zygote | None = None) -> OpenedImpl:
    """The adapter for `--impl spec` (see the module docstring). `allowance`: seconds
    its loading may take (default aclcheck.running.workers.lifetime.START_ALLOWANCE_S);
    `started`: the zygote StartingImpl started for a fork-safe adapter."""
    allowance = lifetime.START_ALLOWANCE_S if allowance is None else allowance
    kind = spec_kind(spec)
    fork_safe = static_fork_safe(spec)
    if isolate is None and not hasattr(os, "fork"):  # no workers here: in-process, said so
        isolate = False
    if isolate is False or (isolate is None and fork_safe is False):
        zygote = None
        if kind != "builtin":  # user code: first where an exit or a hang is contained
            zygote = lifetime.start_zygote(spec)
            if zygote is not None and not _probe(zygote, spec, allowance).fork_safe:
                zygote.close()
                zygote = None
        try:
            return OpenedImpl(build_here(spec), zygote, isolated=False)
        except BaseException:
            if zygote is not None:
                zygote.close()
            raise
    if fork_safe is False:  # a device adapter, asked to run isolated: fresh interpreters
        zygote = _zygote(lifetime.start_exec_zygote())
        return OpenedImpl(WorkerAdapter(spec, _probe_worker(zygote, spec, allowance)), zygote,
                          isolated=True)
    zygote = started if started is not None else _zygote(lifetime.start_zygote(spec))
    info = _probe(zygote, spec, allowance)
    if info.fork_safe:
        return OpenedImpl(WorkerAdapter(spec, info), zygote, isolated=True)
    zygote.close()  # a plugin that is not fork-safe
    if isolate is None:  # runs in this process by default, as device adapters do
        return OpenedImpl(build_here(spec), None, isolated=False)
    return OpenedImpl(WorkerAdapter(spec, info), _zygote(lifetime.start_exec_zygote()),
                      isolated=True)


def describe(spec: str, allowance: float | None = None) -> AdapterInfo:
    """What `spec`'s adapter declares, learnt in a zygote (for listing plugins)."""
    allowance = lifetime.START_ALLOWANCE_S if allowance is None else allowance
    zygote = _zygote(lifetime.start_zygote(spec))
    try:
        return _probe(zygote, spec, allowance)
    finally:
        zygote.close()

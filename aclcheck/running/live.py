"""Judge a `Case` on the fly: make its tensors, run the adapter, compare with the float64
reference. No golden file: the reference is fast enough to recompute per call.

`shrink` and `hunt` are loops around `LiveJudge`; it reuses the runner's executor
(isolation of invalid calls, timeouts) so a case is judged exactly as `verify` would.
"""

from __future__ import annotations

from types import TracebackType

from aclcheck.cases import Case, CaseData
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.errors import UsageError
from aclcheck.impls.base import Implementation
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.ops.materialize import make_tensors
from aclcheck.running.config import VerifyConfig
from aclcheck.running.remote import OpenedImpl, open_impl
from aclcheck.running.runner import CaseRunner, RunOptions, call_of, run_case
from aclcheck.running.zygote import Zygote


def load_in_memory(case: Case) -> CaseData:
    """A case's inputs and golden, made in memory (what a golden file would hold)."""
    return make_tensors(case)


class LiveJudge:
    """Callable: Case -> CaseVerdict, through one adapter. Use as a context manager (it
    owns the executor's worker process, if any)."""

    def __init__(self, impl: Implementation, opts: RunOptions | None = None,
                 zygote: Zygote | None = None) -> None:
        self.impl = impl
        self.caps = Capabilities.of(impl)
        self.executor = CaseRunner(impl, opts or RunOptions(), zygote=zygote)
        self.calls = 0

    def __call__(self, case: Case) -> CaseVerdict:
        self.calls += 1
        return run_case(self.executor, load_in_memory(case), self.caps)

    def output(self, case: Case) -> tuple[CaseData, Outcome]:
        """One more call of a case (what it returned, beside its inputs and golden):
        to print a minimal case whole."""
        self.calls += 1
        data = load_in_memory(case)
        return data, self.executor.call(
            call_of(case, data.inputs, self.executor.opts.judge.overflow_mode))

    def close(self) -> None:
        self.executor.close()

    def __enter__(self) -> LiveJudge:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def can_rerun(impl: Implementation) -> str | None:
    """Why this adapter cannot judge new calls (stored results), or None."""
    from aclcheck.impls.results_impl import ResultsImpl

    if isinstance(impl, ResultsImpl):
        return (f"{impl.name} holds stored outputs of fixed cases; shrink and hunt need an "
                "implementation they can call (--impl)")
    return None


def live_setup(config: VerifyConfig) -> tuple[OpenedImpl, RunOptions]:
    """The adapter of a live command (refusing one that cannot rerun) and its run options,
    once its configuration is checked (the tolerance file is read before any kernel code
    runs)."""
    config.check()
    opts = config.run_options()
    opened = open_impl(config.impl, config.isolate)
    why = can_rerun(opened.impl)
    if why:
        opened.close()
        raise UsageError(why)
    return opened, opts

"""Failing cases' diagnosis evidence (the operator's what-if models: milliseconds a case),
here or in a helper process while the run goes on: on two cores the parent judges the
next cases meanwhile. The helper runs aclcheck's own code on the parent's data only (the
case and the output the worker sent, already checked), never kernel code. It is forked
from this process at the first failing case (everything it needs is imported: a fresh
interpreter would spend a second of CPU on imports), ignores Ctrl-C like every pool
worker (aclcheck.executors.ProcessPool), and holds copies of this process's descriptors
(the zygote's and the workers' sockets): its owner, the CaseRunner, ends it before it
closes them. A helper that breaks leaves the evidence to this process: evidence is
advisory, and the verdict never waits on a broken helper.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from aclcheck import interrupts
from aclcheck.cases import CaseData
from aclcheck.executors import ProcessPool
from aclcheck.judging.diagnosis.reproduce import CaseClues
from aclcheck.ops import operator_of
from aclcheck.running.workers.zygote import PR_SET_PDEATHSIG, prctl

#: outputs larger than this are diagnosed here (the what-if models pass on large cases
#: anyway, and their data would cross to the helper for nothing)
MAX_HELPER_ELEMENTS = 1 << 18
#: seconds between two looks at whether the helper is still there, while its answer is
#: awaited
HELPER_LOOK_S = 1.0


def case_evidence(data: CaseData, output: np.ndarray) -> CaseClues | None:
    """The diagnosis evidence of one failing case (None: its operator has no diagnosis);
    evidence that cannot be computed is `judged=False`, and the verdict stands."""
    hooks = operator_of(data.case).diagnosis
    if hooks is None:
        return None
    try:
        return hooks.evidence(data, output)
    except (ValueError, IndexError, MemoryError, FloatingPointError):
        return CaseClues(data.case.id, judged=False)


def _helper_starts(parent: int) -> None:
    """In the helper, first: ignore Ctrl-C, and die with the parent (a SIGKILLed aclcheck
    leaves no helper behind: the helper's copy of its queue's pipe would keep it
    waiting)."""
    interrupts.child_ignores()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)


def _done(value: CaseClues | None) -> Future[CaseClues | None]:
    future: Future[CaseClues | None] = Future()
    future.set_result(value)
    return future


class CluePool:
    """Evidence futures, computed by one helper process (see the module docstring).
    Owned by one runner: close() it before the descriptors the helper inherited."""

    def __init__(self) -> None:
        self._pool: ProcessPool | None = None
        self._broken = False

    def submit(self, data: CaseData, output: np.ndarray) -> Future[CaseClues | None]:
        """The evidence of a failing case, to come (computed here, at once, for a large
        output or once the helper broke)."""
        if self._broken or output.size > MAX_HELPER_ELEMENTS:
            return _done(case_evidence(data, output))
        try:
            if self._pool is None:
                self._pool = ProcessPool(1, mp_context=mp.get_context("fork"),
                                         initializer=_helper_starts, initargs=(os.getpid(),))
            return self._pool.submit(case_evidence, data, output)
        except (BrokenProcessPool, OSError, RuntimeError, ValueError):  # ValueError: no fork
            self._broken = True
            return _done(case_evidence(data, output))

    def result(self, future: Future[CaseClues | None], data: CaseData,
               output: np.ndarray) -> CaseClues | None:
        """What a future gives; the evidence computed here if the helper broke."""
        while True:
            try:
                return future.result(timeout=HELPER_LOOK_S)
            except FutureTimeout:
                if self._helper_alive():
                    continue  # still computing
            except Exception:  # noqa: BLE001 - a broken helper or a pickling error: here
                pass
            self._broken = True
            return case_evidence(data, output)

    def _helper_alive(self) -> bool:
        """Whether the helper can still answer (a future submitted as it died may never
        be answered: the wait for it is bounded by this look)."""
        pool = self._pool
        if pool is None or getattr(pool, "_broken", False):
            return False
        processes = getattr(pool, "_processes", None) or {}
        return any(p.is_alive() for p in list(processes.values()))

    def close(self, interrupted: bool = False) -> None:
        """End the helper: at once when interrupted, else once its work is done."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if interrupted:
            pool.stop()
        else:
            pool.shutdown(wait=True)

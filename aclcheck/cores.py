"""The cores this process may use: how many workers generate starts (`--jobs auto`) and
how many threads a worker's kernels may use when several workers compute at once.

An isolated run with the stale-state check keeps two workers busy together (the case
worker and the recall worker, aclcheck.running.recall). A framework whose CPU kernels
start one OpenMP thread per core in each of them puts twice as many spinning threads as
cores on the machine: every small call then waits for threads that another process
holds (on a shared 2-core machine a default-suite call took 1-16 ms with two threads
against 0.1 ms with one). So each worker gets its share of the cores, as Dask's
workers do (they start with OMP_NUM_THREADS=1). Where the user set OMP_NUM_THREADS,
that is the word and nothing is changed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

#: the environment variable that, when set, leaves the kernels' threads alone
THREADS_ENV = "OMP_NUM_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def idle_cores(cores: int | None = None, running: Callable[[], int | None] | None = None,
               samples: int = 5, gap_s: float = 0.002) -> int:
    """Cores nothing else is using now: the available cores less the processes running
    elsewhere, the fewest over a few samples of the runnable-task count (this process is
    one of them; a task that runs for a moment is not counted). All the cores where the
    OS gives no such count. Not the load average: it counts what this program itself ran
    a moment ago, so commands run back to back would see their own work as load."""
    cores = available_cores() if cores is None else cores
    read = running or runnable_tasks
    counts = []
    for i in range(samples):
        if i:
            time.sleep(gap_s)
        count = read()
        if count is None:
            return cores
        counts.append(count)
    return max(0, cores - max(0, min(counts) - 1))


def runnable_tasks() -> int | None:
    """Tasks runnable right now on the whole machine (Linux's /proc/loadavg), or None."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return int(f.read().split()[3].partition("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def worker_threads(concurrent: int, cores: int | None = None,
                   env: Mapping[str, str] = os.environ) -> int | None:
    """Threads per worker for `concurrent` workers computing at once: the cores split
    evenly (at least one); None: leave the library's own default (one worker, or
    OMP_NUM_THREADS set by the user)."""
    if concurrent <= 1 or env.get(THREADS_ENV):
        return None
    return max(1, (cores if cores is not None else available_cores()) // concurrent)

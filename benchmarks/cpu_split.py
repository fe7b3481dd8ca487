"""Run one aclcheck command in this process and print its wall time, its own CPU time
and its children's (the zygote and the workers), so a run's parent and workers can be
told apart:

    python benchmarks/cpu_split.py verify small.h5 --impl torch > /dev/null
    PYTHONPATH=/path/to/other/checkout python benchmarks/cpu_split.py verify small.h5

The command's own output goes to stdout; the figures go to stderr.
"""

from __future__ import annotations

import resource
import runpy
import sys
import time


def main() -> None:
    start = time.perf_counter()
    sys.argv = ["aclcheck", *sys.argv[1:]]
    try:
        runpy.run_module("aclcheck", run_name="__main__")
    except SystemExit:
        pass
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"wall {time.perf_counter() - start:.2f} s, this process "
          f"{own.ru_utime + own.ru_stime:.2f} s CPU, children "
          f"{kids.ru_utime + kids.ru_stime:.2f} s CPU", file=sys.stderr)


if __name__ == "__main__":
    main()

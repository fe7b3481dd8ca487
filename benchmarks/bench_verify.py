"""`aclcheck verify` of the default suite against PyTorch CPU, default options, side by
side with a bare hand-written loop over the same file (h5py read, torch in the case
dtype, numpy.allclose). Both are whole commands (interpreter start and imports
included), run in turn for a few rounds; the medians are compared.

    python benchmarks/bench_verify.py [--rounds 3] [--verify-args "--no-isolate"]

Target (issue 13): verify / bare loop <= 4.

The bare loop runs only the calls that must succeed: it has no answer for the calls the
contract rejects (PyTorch CPU accepts some of them and then crashes or spins), which is
exactly the work aclcheck does on top of it.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE_LOOP = r'''
import sys
import h5py, numpy as np, torch

TORCH = {"float16": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16}

def tensor(ds):
    dtype = ds.attrs["dtype"]
    dtype = dtype.decode() if isinstance(dtype, bytes) else dtype
    storage = torch.from_numpy(np.ascontiguousarray(ds[()]).reshape(-1))
    storage = storage.view(torch.bfloat16) if dtype == "bfloat16" else storage
    return storage.as_strided(tuple(ds.attrs["shape"]), tuple(ds.attrs["strides"]),
                              int(ds.attrs["offset"])), dtype

checked = close = 0
with h5py.File(sys.argv[1], "r") as f:
    for row in f["index"][()]:
        if row["expected_status"] != 0 or not row["has_golden"]:
            continue
        group = f["cases"][row["id"].decode()]
        grad, dtype = tensor(group["grad_output"])
        self_, _ = tensor(group["self"])
        if dtype not in TORCH or 0 in grad.shape or 0 in self_.shape:
            continue
        out = torch.ops.aten._adaptive_avg_pool2d_backward(grad, self_)
        checked += 1
        close += np.allclose(out.float().numpy(), group["golden"][()], rtol=1e-2, atol=1e-2,
                             equal_nan=True)
print(f"bare loop: {checked} calls, {close} allclose")
'''


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--verify-args", default="", help="extra options for aclcheck verify")
    args = ap.parse_args()
    aclcheck = [sys.executable, "-m", "aclcheck"]
    with tempfile.TemporaryDirectory() as tmp:
        golden = Path(tmp) / "suite.h5"
        subprocess.run([*aclcheck, "generate", "-o", str(golden)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        loop = Path(tmp) / "bare_loop.py"
        loop.write_text(BARE_LOOP)
        verify = [*aclcheck, "verify", str(golden), "--impl", "torch",
                  *shlex.split(args.verify_args)]
        bare = [sys.executable, str(loop), str(golden)]
        subprocess.run(bare, check=True)  # warms the page cache, shows what it checks
        ours, theirs = [], []
        for _ in range(args.rounds):
            theirs.append(timed(bare))
            ours.append(timed(verify))
        o, t = statistics.median(ours), statistics.median(theirs)
        print(f"default suite, PyTorch CPU, {args.rounds} rounds")
        print(f"aclcheck verify  median {o:7.2f} s  runs {[round(x, 2) for x in ours]}")
        print(f"bare loop        median {t:7.2f} s  runs {[round(x, 2) for x in theirs]}")
        print(f"ratio verify/bare loop: {o / t:.2f} (target <= 4: "
              f"{'met' if o / t <= 4 else 'NOT met'})")
        print("command:", shlex.join(["aclcheck", "verify", "suite.h5", "--impl", "torch",
                                      *shlex.split(args.verify_args)]))


if __name__ == "__main__":
    main()

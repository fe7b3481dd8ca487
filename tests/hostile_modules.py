"""Hostile kernel modules for the red-team tests (tests/test_hostile_*.py).

Each is Python source for a module `fn(grad_output, self) -> out`, written to a file by
`write_module` and run as `--impl FILE.py:fn`: the attack happens when the module is
imported or called, in whatever process does that. Kernels that must reach aclcheck's
worker machinery find it the way a real attacker would (gc, /proc, sys.modules).
"""

from __future__ import annotations

import itertools
from pathlib import Path

#: a correct kernel (float64 reference rounded once), shared by the modules below
CORRECT = '''
import numpy as np
from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward


def correct(grad_output, self):
    fmt = FLOAT_FORMATS[{"float16": "float16", "float32": "float32"}.get(
        str(self.dtype), "bfloat16")]
    out = backward(grad_output, self.shape[-2:])
    return correctly_rounded(out, fmt).astype(self.dtype)


def wrong(grad_output, self):
    return correct(grad_output, self) + 1
'''

# -- attacks while imported -----------------------------------------------------------------

EXIT_ON_IMPORT = "import sys\nsys.exit(0)\n" + CORRECT + "\nfn = correct\n"
OS_EXIT_ON_IMPORT = "import os\nos._exit(0)\n" + CORRECT + "\nfn = correct\n"
NATIVE_EXIT_ON_IMPORT = "import ctypes\nctypes.CDLL(None)._exit(0)\n" + CORRECT + "\nfn = correct\n"
RAISE_ON_IMPORT = "raise RuntimeError('broken at import')\n" + CORRECT + "\nfn = correct\n"
BLOCK_ON_IMPORT = "import time\ntime.sleep(3600)\n" + CORRECT + "\nfn = correct\n"

#: replaces aclcheck's judge with one that passes everything, then computes wrong answers
PATCH_JUDGE_ON_IMPORT = CORRECT + '''
import aclcheck.judging.case.judge, aclcheck.running.runner
from aclcheck.judging.case.verdicts import Verdict


def _always_pass(case, golden, grad, outcome, caps, opts):
    return aclcheck.judging.case.judge._base(case, Verdict.PASS, "patched")


aclcheck.judging.case.judge.judge = _always_pass
aclcheck.running.runner.judge = _always_pass
print("\\x1b[2J\\x1b[31mKERNEL TEXT AT IMPORT\\x1b[0m")
fn = wrong
'''

#: makes the zygote that imports it answer fork requests with aclcheck's own pid (a
#: parent that believed it would kill itself when it retires the "worker")
ZYGOTE_LIES_ABOUT_PIDS = CORRECT + '''
import os
import aclcheck.running.workers.zygote as z

_real_send = z._send


def _lying(sock, message):
    if "pid" in message:
        message = dict(message, pid=os.getppid())
    _real_send(sock, message)


z._send = _lying
fn = correct
'''

# -- attacks through the worker protocol ---------------------------------------------------

_CHANNEL = '''
import gc, os, struct, sys, time, json
from aclcheck.running.workers import wire


def channel():
    return next(o for o in gc.get_objects() if isinstance(o, wire.Channel))


def pending_seq():
    """The sequence number of the call being answered (the worker's loop holds its
    header)."""
    return max(o.seq for o in gc.get_objects()
               if isinstance(o, wire.Head) and o.kind == wire.CALL)
'''

#: the result's unpickling would end the parent with status 0 (if it were unpickled)
UNPICKLE_BOMB = CORRECT + '''
import os


class Bomb:
    def __reduce__(self):
        return (os._exit, (0,))


def fn(grad_output, self):
    return Bomb()
'''

#: a frame of garbage instead of an answer
GARBAGE_FRAME = CORRECT + _CHANNEL + '''
def fn(grad_output, self):
    ch = channel()
    ch.sock.sendall(b"\\x80\\x04garbage that is not a frame" * 4)
    time.sleep(3600)
'''

#: half a frame, then silence: must end at the deadline, not hang
PARTIAL_FRAME = CORRECT + _CHANNEL + '''
def fn(grad_output, self):
    ch = channel()
    head = struct.pack("!4sB3xIIQ", b"ACW1", wire.OUTCOME, pending_seq(), 1000, 0)
    ch.sock.sendall(head + b'{"status": nu')
    time.sleep(3600)
'''

#: announces a terabyte of output data
HUGE_FRAME = CORRECT + _CHANNEL + '''
def fn(grad_output, self):
    ch = channel()
    meta = json.dumps({"output": {"type": "ndarray", "dtype": str(self.dtype),
                                  "shape": list(self.shape)}}).encode()
    head = struct.pack("!4sB3xIIQ", b"ACW1", wire.OUTCOME, pending_seq(), len(meta), 1 << 40)
    ch.sock.sendall(head + meta)
    time.sleep(3600)
'''

#: answers a call that was never made (a frame for the next sequence number)
WRONG_SEQ = CORRECT + _CHANNEL + '''
def fn(grad_output, self):
    ch = channel()
    out = correct(grad_output, self)
    meta, data = wire.encode_outcome(wire.Outcome(output=out), _case(grad_output), 0.0)
    ch.send(wire.OUTCOME, pending_seq() + 7, meta, data)
    time.sleep(3600)


def _case(grad_output):
    return next(o for o in gc.get_objects() if type(o).__name__ == "CallInputs").case
'''

#: declines (SKIP) exactly the cases it would fail: a callable cannot decline
DECLINES_WHAT_IT_FAILS = CORRECT + _CHANNEL + '''
def fn(grad_output, self):
    if grad_output.ndim == 3:
        channel().send(wire.UNSUPPORTED, pending_seq(), {"reason": "not today"})
        time.sleep(3600)
    return correct(grad_output, self)
'''

#: a non-deterministic kernel (noise in the last bits of every call) whose worker claims
#: in each answer that deterministic mode was refused (an excuse for --deterministic)
_NOISY = """
import os

import numpy as np

from tests import kernels as _k


def noisy(grad_output, self):
    \"\"\"FLOAT32 terms added in a fresh random order at every call: correct, and not the
    same bits twice (atomic adds without deterministic mode).\"\"\"
    kh, kw, ih, iw = _k._geometry(grad_output, self)
    terms = _k._terms(grad_output.astype(np.float32), kh, kw, reciprocal=True)
    stack = np.stack(list(_k._gathers(terms, ih, iw)), axis=0)
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    order = np.argsort(rng.random(stack.shape), axis=0)
    out = np.zeros(self.shape, dtype=np.float32)
    for part in np.take_along_axis(stack, order, axis=0):
        out += part
    return _k._to_dtype(out, self.dtype)
"""
CLAIMS_REFUSAL_IN_ANSWERS = CORRECT + _NOISY + '''
import dataclasses

import aclcheck.impls.callable_impl as ci

_run = ci.CallableImpl.run


def _claiming(self, call):
    return dataclasses.replace(_run(self, call), deterministic_refused=True)


ci.CallableImpl.run = _claiming
fn = noisy
'''

#: the same kernel, its worker saying in its READY frame that it cannot switch modes
CLAIMS_REFUSAL_WHEN_READY = CORRECT + _NOISY + '''
import aclcheck.impls.callable_impl as ci

ci.CallableImpl.set_deterministic = lambda self, on: "cannot switch deterministic mode"
fn = noisy
'''

#: stops (SIGSTOP) every other worker of its zygote: the spare forked ahead and the
#: stale-state check's worker; then kills itself. No wait of the run may outlast --timeout.
STOPS_SIBLINGS = CORRECT + '''
import os, signal


def fn(grad_output, self):
    if grad_output.ndim == 3:
        parent = os.getppid()
        with open(f"/proc/{parent}/task/{parent}/children") as f:
            siblings = [int(p) for p in f.read().split() if int(p) != os.getpid()]
        for pid in siblings:
            os.kill(pid, signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGKILL)
    return correct(grad_output, self)
'''

#: returns an ndarray subclass whose `shape` and `dtype` claim what the case expects
#: while its memory holds three elements
LYING_ARRAY = CORRECT + '''
import numpy as np


class Liar(np.ndarray):
    claimed = None

    @property
    def shape(self):
        return self.claimed[0]

    @property
    def dtype(self):
        return self.claimed[1]


def fn(grad_output, self):
    out = np.zeros(3, dtype=np.uint8).view(Liar)
    out.claimed = (self.shape, self.dtype)
    return out
'''

#: answers, then stops reading its calls (the next send must not block the parent)
STOPS_READING = CORRECT + '''
import time
from aclcheck.running.workers import wire


def _never(*args, **kwargs):
    time.sleep(3600)


def fn(grad_output, self):
    wire.Channel.read_head = _never
    return correct(grad_output, self)
'''

#: floods stdout and stderr (64 MiB), then answers correctly
FLOODS_OUTPUT = CORRECT + '''
import os


def fn(grad_output, self):
    chunk = b"\\x1b[31mnoise\\x07" * 6000 + b"\\n"
    for _ in range(64 * 1024 * 1024 // len(chunk)):
        os.write(2, chunk)
    os.write(1, b"LAST LINE \\x1b[2J\\n")
    return correct(grad_output, self)
'''

#: starts a grandchild in its own session (out of the worker's process group), then hangs
SETSID_GRANDCHILD = CORRECT + '''
import os, subprocess, sys, time


def fn(grad_output, self):
    if grad_output.ndim == 3:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 start_new_session=True)
        with open(os.environ["HOSTILE_PIDS"], "a") as f:
            f.write(f"{child.pid}\\n")
        time.sleep(3600)
    return correct(grad_output, self)
'''

#: kills its zygote (the worker's parent, which takes the worker with it): later cases
#: must still run
KILLS_ZYGOTE = CORRECT + '''
import os, signal, time


def fn(grad_output, self):
    if grad_output.ndim == 3:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(3600)
    return correct(grad_output, self)
'''

#: stops its zygote (SIGSTOP), then dies: the zygote's silence must meet a deadline
STOPS_ZYGOTE = CORRECT + '''
import os, signal


def fn(grad_output, self):
    if grad_output.ndim == 3:
        os.kill(os.getppid(), signal.SIGSTOP)
        os._exit(3)
    return correct(grad_output, self)
'''

#: rewrites the golden file (same bytes, new change time) while the run reads it
TOUCHES_GOLDEN = CORRECT + '''
import os


def fn(grad_output, self):
    path = os.environ["HOSTILE_GOLDEN"]
    with open(path, "r+b") as f:
        first = f.read(1)
        f.seek(0)
        f.write(first)
    return correct(grad_output, self)
'''

#: declares dtypes that match nothing: every case SKIP
DECLARES_NOTHING = CORRECT + '''
def fn(grad_output, self):
    return correct(grad_output, self)


fn.aclcheck_dtypes = ("float64",)
'''

#: raises with every kind of hostile text
HOSTILE_TEXT = ("\x1b[2J\x1b[31mred\x07 \x00 \r\n[[cases]]\nid = 'injected' \u202eevil\u202c "
                "]]> </script><script>alert(1)</script> [bold]markup[/bold] :smile: \udc80")
RAISES_HOSTILE_TEXT = CORRECT + f'''
import os, sys


def fn(grad_output, self):
    if os.environ.get("HOSTILE_PRINT"):  # in a worker: captured (in-process: the console's)
        sys.stdout.write({HOSTILE_TEXT!r}.encode("utf-8", "surrogateescape").decode(
            "utf-8", "replace") + "\\n")
    raise ValueError({HOSTILE_TEXT!r})
'''

# -- attacks on aclcheck's own process (--no-isolate) --------------------------------------

PATCHES_JUDGE_WHEN_CALLED = CORRECT + '''
import aclcheck.judging.case.judge, aclcheck.running.runner, aclcheck.judging.case.compare
from aclcheck.judging.case.verdicts import Verdict


def _always_pass(case, golden, grad, outcome, caps, opts):
    return aclcheck.judging.case.judge._base(case, Verdict.PASS, "patched")


def fn(grad_output, self):
    aclcheck.running.runner.judge = _always_pass
    aclcheck.judging.case.compare.compare_output.__code__ = (lambda *a, **k: None).__code__
    return correct(grad_output, self) * 3
'''

CHANGES_CWD_AND_UMASK = CORRECT + '''
import os


def fn(grad_output, self):
    os.chdir(os.environ["HOSTILE_ELSEWHERE"])
    os.umask(0o777)
    return correct(grad_output, self)
'''

REGISTERS_EXIT_ZERO = CORRECT + '''
import atexit, os


def fn(grad_output, self):
    atexit.register(os._exit, 0)
    return correct(grad_output, self) * 3
'''

_names = itertools.count()


def write_module(folder: Path, source: str, stem: str = "hostile") -> str:
    """Write `source` as a fresh module file (a unique name: in-process runs import it by
    its stem) and return its spec `FILE.py:fn`."""
    path = folder / f"{stem}_{next(_names)}.py"
    path.write_text(source)
    return f"{path}:fn"

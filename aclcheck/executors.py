"""Executors the verify runner can fan cases out over: a local process pool, or a Dask
cluster (`dask://HOST:PORT`, optional extra `aclcheck[dask]`)."""

from __future__ import annotations

import multiprocessing as mp
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from aclcheck import interrupts
from aclcheck.errors import UsageError


class ProcessPool(ProcessPoolExecutor):
    """A process pool whose workers never see Ctrl-C (no traceback from each of them):
    they start with SIGINT blocked and ignore it, the parent is interrupted and `stop()`s
    them at once instead of waiting for the cases in flight."""

    def __init__(self, jobs: int, mp_context: Any = None) -> None:
        super().__init__(jobs, mp_context=mp_context, initializer=interrupts.child_ignores)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with interrupts.held_for_children():  # workers are started by submit()
            return super().submit(fn, *args, **kwargs)

    def stop(self) -> None:
        """Cancel what waits, end the workers now, and shut down."""
        for process in list(self._processes.values()):  # public only from Python 3.14 on
            process.terminate()
        self.shutdown(wait=True, cancel_futures=True)


def _refuses_connections(address: str) -> str | None:
    """Why nothing listens at HOST:PORT (connection refused, unknown host), or None when
    something may: a refused connection is final, so it need not wait out the Dask
    client's connect timeout (which is for a scheduler that is still starting)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            return None
    except (ConnectionRefusedError, socket.gaierror, ValueError) as exc:
        return str(exc) or type(exc).__name__
    except OSError:  # a timeout or an unreachable network: let the client decide
        return None


@contextmanager
def open_executor(jobs: int = 1, url: str | None = None) -> Iterator[Any | None]:
    """None for a serial run; else an object with concurrent.futures' submit()."""
    if url:
        if not url.startswith("dask://"):
            raise UsageError(f"--executor {url!r}: expected dask://HOST:PORT")
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("--executor dask://...: install the extra: "
                             "pip install 'aclcheck[dask]'") from None
        refused = _refuses_connections(url.removeprefix("dask://"))
        if refused is not None:
            raise UsageError(f"--executor {url}: cannot reach the scheduler: {refused}")
        address = "tcp://" + url.removeprefix("dask://")
        try:
            client = Client(address, timeout="20s")
        except OSError as exc:
            raise UsageError(f"--executor {url}: cannot reach the scheduler: {exc}") from None
        try:
            yield client.get_executor(pure=False)
        finally:
            client.close()
        return
    if jobs <= 1:
        yield None
        return
    pool = ProcessPool(jobs, mp_context=mp.get_context("spawn"))
    try:
        yield pool
    except BaseException:
        pool.stop()
        raise
    finally:
        pool.shutdown(cancel_futures=True)

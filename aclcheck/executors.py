"""Executors that fan work out (verify's cases, generate's batches, hunt's batches): a
local process pool (`--jobs N`), a Dask cluster (`--executor dask://HOST:PORT`), or a
Dask LocalCluster this command starts and stops (`--executor dask-local:N`: N worker
processes of one thread each, on localhost, no dashboard). Dask is the optional extra
`aclcheck[dask]`. Every executor has concurrent.futures' `submit`, and `slots` says how
many tasks it runs at once (how many to keep in flight)."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aclcheck import interrupts
from aclcheck.errors import UsageError

#: how often a pool worker looks whether the process that started it is still there
PARENT_LOOK_S = 0.5


def follow_parent(parent: int) -> None:
    """In a child: end it (SIGKILL, so what it started and tied to it goes too) as soon as
    `parent` is no longer its parent, however the parent ended (kill -9 included). A
    thread that looks every PARENT_LOOK_S, not PR_SET_PDEATHSIG: that signal follows the
    thread that started the child, and a pool may start workers from any thread."""
    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(PARENT_LOOK_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="aclcheck-parent-watch", daemon=True).start()


def pool_worker_starts(parent: int) -> None:
    """What each ProcessPool worker runs first: ignore Ctrl-C, end with its parent."""
    interrupts.child_ignores()
    follow_parent(parent)


class ProcessPool(ProcessPoolExecutor):
    """A process pool whose workers never see Ctrl-C (no traceback from each of them):
    they start with SIGINT blocked and ignore it, the parent is interrupted and `stop()`s
    them at once instead of waiting for the cases in flight. Its workers end when this
    process ends, however it ends (follow_parent)."""

    def __init__(self, jobs: int, mp_context: Any = None,
                 initializer: Callable[..., None] | None = None,
                 initargs: tuple[Any, ...] = ()) -> None:
        """`initializer`: what each worker runs first; it must call
        interrupts.child_ignores() and end with its parent (the default,
        pool_worker_starts, does both)."""
        if initializer is None:
            initializer, initargs = pool_worker_starts, (os.getpid(),)
        super().__init__(jobs, mp_context=mp_context, initializer=initializer,
                         initargs=initargs)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with interrupts.held_for_children():  # workers are started by submit()
            return super().submit(fn, *args, **kwargs)

    def stop(self) -> None:
        """Cancel what waits, end the workers now, and shut down."""
        for process in list(self._processes.values()):  # public only from Python 3.14 on
            process.terminate()
        self.shutdown(wait=True, cancel_futures=True)


class RenewingPool:
    """--jobs N's pool for verify and generate: where a worker died (a kernel that ended
    its process under --no-isolate, an out-of-memory kill), the broken pool is replaced by
    a fresh one at the next submit, so the work after it (and the lost piece's retry)
    still runs."""

    def __init__(self, jobs: int, mp_context: Any = None) -> None:
        self._max_workers, self._context = jobs, mp_context
        self._pool = ProcessPool(jobs, mp_context=mp_context)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        try:
            return self._pool.submit(fn, *args, **kwargs)
        except BrokenProcessPool:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = ProcessPool(self._max_workers, mp_context=self._context)
            return self._pool.submit(fn, *args, **kwargs)

    def stop(self) -> None:
        self._pool.stop()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)

    def __enter__(self) -> RenewingPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown(wait=True)


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


#: the two spellings --executor takes
DASK_URL, DASK_LOCAL = "dask://", "dask-local:"
EXECUTOR_FORMS = "dask://HOST:PORT or dask-local:N"


@dataclass(frozen=True)
class ExecutorSpec:
    """A parsed --executor value: a scheduler's address, or a local cluster's size."""

    address: str | None = None  # "HOST:PORT" of a running scheduler
    local_workers: int = 0  # N of dask-local:N


def parse_executor(url: str) -> ExecutorSpec:
    """The --executor value as an ExecutorSpec (UsageError, one line, when malformed)."""
    if url.startswith(DASK_URL):
        address = url.removeprefix(DASK_URL)
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"--executor {url!r}: expected dask://HOST:PORT "
                             "(e.g. dask://10.0.0.5:8786)")
        return ExecutorSpec(address=address)
    if url.startswith(DASK_LOCAL):
        count = url.removeprefix(DASK_LOCAL)
        if not (count.isascii() and count.isdigit()) or int(count) < 1:
            raise UsageError(f"--executor {url!r}: N of dask-local:N must be a positive "
                             "integer (worker processes on this machine)")
        return ExecutorSpec(local_workers=int(count))
    raise UsageError(f"--executor {url!r}: expected {EXECUTOR_FORMS}")


def _distributed(url: str) -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--executor {url}: Dask is not installed; install the extra: "
                         "pip install 'aclcheck[dask]'") from None
    return distributed


class DaskExecutor:
    """A Dask client's concurrent.futures executor (futures that
    concurrent.futures.wait() accepts), and how many tasks its workers run at once."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._executor = client.get_executor(pure=False)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self._executor.submit(fn, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """The rest of concurrent.futures' Executor (map, shutdown): the client's."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._executor, name)

    @property
    def slots(self) -> int:
        """Threads over all workers now (at least 1: workers may still be joining)."""
        return max(1, sum(self.client.nthreads().values()))


@contextmanager
def _dask_client(url: str, spec: ExecutorSpec) -> Iterator[DaskExecutor]:
    distributed = _distributed(url)
    if spec.local_workers:
        import logging

        import dask

        # a task whose worker dies fails at once (aclcheck retries it once itself and then
        # makes it that case's or batch's ERROR), not after killing three more workers;
        # the scheduler's own log lines about it stay quiet (the report says it)
        with interrupts.held_for_children(), dask.config.set(
                {"distributed.scheduler.allowed-failures": 0}):
            cluster = distributed.LocalCluster(
                n_workers=spec.local_workers, threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address=None, silence_logs=logging.CRITICAL,
                # the scheduler's HTTP endpoint (health, metrics) on a free port: its
                # default 8787 warns when another cluster holds it
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                preload=[__name__])  # dask_setup below, in every worker
        try:
            client = distributed.Client(cluster)
            try:
                yield DaskExecutor(client)
            finally:
                client.close()
        finally:
            cluster.close()
        return
    assert spec.address is not None
    refused = _refuses_connections(spec.address)
    if refused is not None:
        raise UsageError(f"--executor {url}: cannot reach the scheduler: {refused}")
    try:
        client = distributed.Client("tcp://" + spec.address, timeout="20s")
    except OSError as exc:
        raise UsageError(f"--executor {url}: cannot reach the scheduler: {exc}") from None
    try:
        yield DaskExecutor(client)
    finally:
        client.close()


def dask_setup(worker: Any) -> None:
    """Run by each worker of a dask-local cluster as it starts (a Dask preload): it
    ignores Ctrl-C, which reaches the whole process group from a terminal; this process
    decides, and closes the cluster."""
    interrupts.child_ignores()


@contextmanager
def open_executor(jobs: int = 1, url: str | None = None) -> Iterator[Any | None]:
    """None for a serial run; else an object with concurrent.futures' submit(): a Dask
    executor for `url` (see parse_executor), else a pool of `jobs` local processes."""
    if url:
        with _dask_client(url, parse_executor(url)) as executor:
            yield executor
        return
    if jobs <= 1:
        yield None
        return
    pool = RenewingPool(jobs, mp_context=mp.get_context("spawn"))
    try:
        yield pool
    except BaseException:
        pool.stop()
        raise
    finally:
        pool.shutdown(cancel_futures=True)

"""Executors the verify runner can fan cases out over: a local process pool, or a Dask
cluster (`dask://HOST:PORT`, optional extra `aclcheck[dask]`)."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from aclcheck.errors import UsageError


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
    pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"))
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)

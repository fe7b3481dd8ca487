"""Importers of the vendor's own test cases into aclcheck case-file entries: ATK system
tests (read_atk) and ops-nn op_api unit tests (read_ops_nn_ut). Both are pure: they read
one file and return plain entries, and anything they do not understand is a SuiteError
naming the file and line."""

from pathlib import Path

from aclcheck.ops.adaptive.vendor.atk import read_atk
from aclcheck.ops.adaptive.vendor.imported import Imported, Skipped
from aclcheck.ops.adaptive.vendor.ops_nn_ut import read_ops_nn_ut

__all__ = ["Imported", "Skipped", "read_atk", "read_ops_nn_ut", "read_vendor"]


def read_vendor(kind: str, path: str | Path, api: str, product: str,
                fmt: str | None = None) -> Imported:
    """The entries of one vendor file of format `kind` ("atk" or "ops-nn-ut") testing
    `api` (Operator.vendor_cases of both average-pooling operators)."""
    if kind == "atk":
        return read_atk(path, api, product, fmt)
    if kind == "ops-nn-ut":
        return read_ops_nn_ut(path, api, product)
    raise ValueError(f"unknown vendor format {kind!r}")

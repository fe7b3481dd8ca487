"""How tensors of each dtype are stored (HDF5 pools, results files, .bin exchange):
bfloat16 as its uint16 bits, bool as uint8 0/1, every other dtype as itself."""

from __future__ import annotations

from functools import cache

import ml_dtypes
import numpy as np

from aclcheck.dtypes import BFLOAT16, NUMPY_DTYPES


def to_storage(values: np.ndarray) -> np.ndarray:
    """Array as it is stored in HDF5: bfloat16 as uint16 bits, others unchanged."""
    arr = np.asarray(values)
    if arr.dtype == BFLOAT16.np_dtype:
        return arr.view(np.uint16)
    return arr


def from_storage(stored: np.ndarray, dtype_name: str) -> np.ndarray:
    """Inverse of `to_storage`: reinterpret stored bits as the named dtype."""
    arr = np.asarray(stored)
    if dtype_name == "bfloat16":
        if arr.dtype != np.uint16:
            raise TypeError(f"bfloat16 data must be stored as uint16, found {arr.dtype}")
        return arr.view(ml_dtypes.bfloat16)
    return arr


def encode_array(values: np.ndarray) -> tuple[np.ndarray, str]:
    """(array as stored, dtype name): bfloat16 as uint16 bits, bool as uint8 0/1."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8), "bool"
    name = dtype_name(arr.dtype)
    return to_storage(arr), name


def decode_array(stored: np.ndarray, name: str) -> np.ndarray:
    """Inverse of `encode_array`."""
    if name == "bool":
        return np.asarray(stored) != 0
    return from_storage(stored, name)


def dtype_name(dtype: np.dtype) -> str:
    """Canonical name of a numpy dtype ('bfloat16' for ml_dtypes.bfloat16)."""
    dt = np.dtype(dtype)
    if dt == np.dtype(ml_dtypes.bfloat16):
        return "bfloat16"
    if dt == np.bool_:
        return "bool"
    return dt.name


@cache
def storage_dtype(name: str) -> np.dtype:
    """The numpy dtype a tensor of dtype `name` is stored as."""
    if name == "bfloat16":
        return np.dtype(np.uint16)
    if name == "bool":
        return np.dtype(np.uint8)
    if name not in NUMPY_DTYPES:
        raise KeyError(name)
    return np.dtype(NUMPY_DTYPES[name])

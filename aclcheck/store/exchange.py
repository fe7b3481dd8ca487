"""The .bin folder exchange: a golden suite as raw files a C/C++ harness can read without
HDF5, and the harness's out.bin / status.txt files back into the results layout.

    DIR/manifest.json                   what every file holds (docs/bin-exchange.md)
    DIR/<case_id>/<input role>.bin      storage buffers as stored, little-endian (one
                                        file per input role of the operator)
    DIR/<case_id>/golden.bin            float64, C order, the output's shape
    DIR/<case_id>/out.bin, status.txt   written by the harness, read by `import`

Raw means: elements in storage order, little-endian, bfloat16 as its 16-bit pattern, bool
as one byte 0/1. The functions here only read and write files; the CLI is cli/exchange.py.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aclcheck import __version__
from aclcheck.cases import Case
from aclcheck.cases.acl import ACL_FORMAT_ENUM, MAX_RANK, SUCCESS, status_name
from aclcheck.cases.layouts import StridedTensor, contiguous_view
from aclcheck.configfile import read_document
from aclcheck.dtypes import ACL_DTYPE_ENUM
from aclcheck.errors import InputFileError, OutputFileError, UsageError
from aclcheck.report.files import atomic_write
from aclcheck.store.codec import is_safe_id
from aclcheck.store.dispatch import GoldenFile
from aclcheck.store.dtype_codec import decode_array, encode_array, storage_dtype
from aclcheck.store.file_guard import Role, check_apart
from aclcheck.store.h5read import READ_LIMIT_ENV, default_read_limit
from aclcheck.store.records import MAX_DIM
from aclcheck.store.results import ResultRow

MANIFEST = "manifest.json"
FORMAT = "aclcheck-bin-exchange"
SCHEMA_VERSION = 1
OUT_FILE = "out.bin"
STATUS_FILE = "status.txt"
#: Largest status.txt read (a status line and a message).
MAX_STATUS_BYTES = 1 << 20
#: Largest manifest.json read or written (about 1.6 KB a case: some 160 000 cases);
#: export refuses a selection whose manifest would pass it, before import would.
MAX_MANIFEST_BYTES = 256 << 20


@dataclass
class ExportStats:
    cases: int = 0
    files: int = 0
    bytes: int = 0


@dataclass
class ImportResult:
    """Rows for the results file, read as they are consumed (one out.bin in memory at a
    time, whatever the case count), and, once they are: how many there were, how many
    with an output, and the cases the harness left no answer for."""

    rows: Iterator[ResultRow] = field(default_factory=lambda: iter(()))
    missing: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    count: int = 0
    with_output: int = 0


# -- encoding ----------------------------------------------------------------------------


def raw_bytes(values: np.ndarray) -> bytes:
    """Elements in C order, little-endian (bfloat16 as uint16 bits, bool as uint8)."""
    stored, _ = encode_array(np.ascontiguousarray(values))
    return np.ascontiguousarray(stored).astype(stored.dtype.newbyteorder("<")).tobytes()


def element_size(dtype: str) -> int:
    return storage_dtype(dtype).itemsize


def decode_raw(data: bytes | np.ndarray, dtype: str, shape: Sequence[int]) -> np.ndarray:
    """Inverse of `raw_bytes` for an array of `shape` (the byte count must match); no
    copy of the data where the host is little-endian."""
    stored = np.frombuffer(data, dtype=storage_dtype(dtype).newbyteorder("<"))
    native = stored.astype(storage_dtype(dtype), copy=False).reshape(tuple(shape))
    return decode_array(native, dtype)


def _tensor_spec(file: str, dtype: str, fmt: str, shape: Sequence[int],
                 strides: Sequence[int], offset: int, storage_size: int,
                 storage_shape: Sequence[int] | None = None) -> dict[str, Any]:
    size = element_size(dtype)
    spec = {
        "file": file, "dtype": dtype, "acl_dtype": ACL_DTYPE_ENUM[dtype],
        "element_size": size, "format": fmt, "acl_format": ACL_FORMAT_ENUM[fmt],
        "shape": [int(d) for d in shape], "strides": [int(s) for s in strides],
        "offset": int(offset), "storage_size": int(storage_size),
        "bytes": int(storage_size) * size,
    }
    stated = {} if storage_shape is None else {"storage_shape": [int(d) for d in storage_shape]}
    return {**spec, **stated}  # storage_shape: the storage dims a vendor case's call states


def case_entry(case: Case, inputs: Mapping[str, StridedTensor | None],
               has_golden: bool) -> dict[str, Any]:
    """The manifest entry of one case (what a harness needs to make the call): one tensor
    entry per role (input files `{role}.bin`, the output `out.bin`; None for a null
    pointer) and the golden."""
    exp = case.expectation
    tensors: dict[str, Any] = {}
    for name, t in inputs.items():
        if t is None:
            tensors[name] = None
            continue
        desc = case.tensor_desc(name)
        tensors[name] = _tensor_spec(f"{name}.bin", desc.dtype, desc.format, t.shape,
                                     t.strides, t.offset, t.storage.size, desc.storage)
    out = case.output().name
    if out in case.null:
        tensors[out] = None
    else:
        desc = case.tensor_desc(out)
        shape = tuple(desc.shape)
        tensors[out] = _tensor_spec(OUT_FILE, desc.dtype, desc.format, shape,
                                    *contiguous_view(shape))
    golden = None
    if has_golden:
        shape = case.expected_output()[1]
        golden = {"file": "golden.bin", "dtype": "float64", "element_size": 8,
                  "shape": list(shape), "bytes": 8 * math.prod(shape)}
    return {
        "id": case.id, "dir": case.id, "product": case.product, "family": case.family,
        "dtype": case.dtype, "format": case.format, "layout": case.layout,
        "distribution": case.distribution, "null": list(case.null),
        "expected_status": exp.status, "expected_status_name": status_name(exp.status),
        "expected_rule": exp.rule, "expected_reason": exp.reason,
        "out_written": case.out_written, "tensors": tensors, "golden": golden,
    }


# -- export --------------------------------------------------------------------------------


def prepare_dir(out_dir: Path, force: bool) -> None:
    """Create the export folder; refuse an existing export unless `force`."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a folder")
    if not out_dir.exists():
        if not out_dir.parent.is_dir():
            raise UsageError(f"{out_dir}: parent folder {out_dir.parent} does not exist")
        try:
            out_dir.mkdir()
        except OSError as exc:
            raise OutputFileError(f"{out_dir}: cannot create: {exc.strerror or exc}") from None
        return
    if any(out_dir.iterdir()) and not force:
        raise UsageError(f"{out_dir}: folder is not empty (use --force to overwrite)")


#: bytes of a manifest's fields besides its cases (an upper bound)
MANIFEST_HEAD_BYTES = 64 << 10


def export_cases(gf: GoldenFile, ids: Iterable[str], out_dir: str | Path, *,
                 force: bool = False) -> ExportStats:
    """Write the selected cases of an open golden file as .bin files plus manifest.json.

    The manifest is written last, so an interrupted export has none. With `force`, each
    exported case's folder is replaced (stale out.bin / status.txt files go with it).
    """
    root = Path(out_dir)
    ids = list(ids)
    for case_id in ids:  # before anything is written: each id becomes a folder name
        if not is_safe_id(case_id):
            raise InputFileError.at(gf.path, f"case id {case_id!r} is not a plain name; "
                                    "nothing exported")
    check_apart([Role("GOLDEN", gf.path)],  # what the export writes or replaces
                [Role("FOLDER", root / MANIFEST),
                 *(Role("FOLDER", root / case_id, tree=True) for case_id in ids)])
    prepare_dir(root, force)
    stats = ExportStats()
    entries = []
    size = MANIFEST_HEAD_BYTES
    for case_id in ids:
        case = gf.case(case_id)
        data = gf.data(case_id)
        golden = data.golden
        entry = case_entry(case, data.inputs, golden is not None)
        size += len(json.dumps(entry, indent=1)) + 4  # a manifest as import reads it
        if size > MAX_MANIFEST_BYTES:
            raise UsageError(f"{root}: a manifest of the first {stats.cases + 1} of "
                             f"{len(ids)} cases passes the {MAX_MANIFEST_BYTES >> 20} MiB "
                             "import reads: export fewer cases per folder (--product, "
                             "--dtype, --family, --id)")
        case_dir = _fresh_dir(_case_dir(root, entry["dir"]))
        for name, tensor in data.inputs.items():
            spec = entry["tensors"][name]
            if spec is not None and tensor is not None:
                stats.bytes += _write(case_dir / spec["file"], raw_bytes(tensor.storage))
                stats.files += 1
        if golden is not None:
            stats.bytes += _write(case_dir / "golden.bin",
                                  raw_bytes(np.asarray(golden, dtype=np.float64)))
            stats.files += 1
        entries.append(entry)
        stats.cases += 1
    manifest = {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "tool_version": __version__,
        "golden": str(gf.path), "suite": str(gf.meta.get("suite", "")),
        "byte_order": "little", "result_files": {"out": OUT_FILE, "status": STATUS_FILE},
        "enums": {"acl_dtype": ACL_DTYPE_ENUM, "acl_format": ACL_FORMAT_ENUM},
        "case_count": len(entries), "cases": entries,
    }
    text = json.dumps(manifest, indent=1)
    try:  # a manifest of an earlier export is replaced whole, never truncated
        atomic_write(root / MANIFEST, lambda fh: fh.write(text))
    except OSError as exc:
        raise OutputFileError(f"{root / MANIFEST}: cannot write: "
                              f"{exc.strerror or exc}") from None
    stats.files += 1
    return stats


def _case_dir(root: Path, name: str) -> Path:
    """root/name, refusing any name that is not one plain path component."""
    if not is_safe_id(name) or Path(name).name != name:
        raise InputFileError(f"case folder {name!r} is not a plain name")
    return root / name


def _fresh_dir(path: Path) -> Path:
    """An empty folder at `path` (a link or file there is removed, not followed)."""
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
        path.mkdir()
    except OSError as exc:
        raise OutputFileError(f"{path}: cannot replace: {exc.strerror or exc}") from None
    return path


def _write(path: Path, data: bytes) -> int:
    try:
        path.write_bytes(data)
    except OSError as exc:  # a full disk, a read-only folder: one line, not a traceback
        raise OutputFileError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return len(data)


# -- import --------------------------------------------------------------------------------


def _bad(path: Path, what: str) -> InputFileError:
    return InputFileError.at(path, f"{what}")


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The validated manifest of an export folder (InputFileError naming the file)."""
    path = Path(folder) / MANIFEST
    if not Path(folder).is_dir():
        raise InputFileError.at(folder, "not a folder")
    if not path.exists():
        raise _bad(path, "missing (is this an `aclcheck export` folder?)")
    manifest = read_document(path, "exchange manifest", syntax="json",
                             max_bytes=MAX_MANIFEST_BYTES, error=InputFileError)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _bad(path, f"not an aclcheck exchange manifest (format must be {FORMAT!r})")
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise _bad(path, f"schema_version {version!r} is not supported (max {SCHEMA_VERSION})")
    cases = manifest.get("cases")
    if not isinstance(cases, list):
        raise _bad(path, "'cases' must be a list")
    seen: set[str] = set()
    for k, entry in enumerate(cases):
        _check_entry(path, k, entry)
        if entry["id"] in seen:
            raise _bad(path, f"case {entry['id']!r} is listed twice")
        seen.add(entry["id"])
    return manifest


def _check_entry(path: Path, k: int, entry: Any) -> None:
    where = f"cases[{k}]"
    if not isinstance(entry, dict):
        raise _bad(path, f"{where} is not an object")
    for key in ("id", "dir"):
        value = entry.get(key)
        if not is_safe_id(value):
            raise _bad(path, f"{where}.{key} must be a plain name ([A-Za-z0-9_.-]), "
                       f"got {value!r}")
    tensors = entry.get("tensors")
    if not isinstance(tensors, dict) or "out" not in tensors:
        raise _bad(path, f"{where} ({entry['id']}): 'tensors.out' is missing")
    out = tensors["out"]
    if out is None:
        return
    if not isinstance(out, dict):
        raise _bad(path, f"{where} ({entry['id']}): 'tensors.out' is not an object")
    shape = out.get("shape")
    if (not isinstance(shape, list) or len(shape) > MAX_RANK
            or not all(isinstance(d, int) and not isinstance(d, bool)
                       and -MAX_DIM <= d <= MAX_DIM for d in shape)):
        raise _bad(path, f"{where} ({entry['id']}): tensors.out.shape must be a list of "
                   "integers (negative only in a call that must be refused)")
    try:
        size = element_size(str(out.get("dtype")))
    except KeyError:
        raise _bad(path, f"{where} ({entry['id']}): unknown out dtype "
                   f"{out.get('dtype')!r}") from None
    count = contiguous_view(tuple(shape))[2]
    for key, implied in (("element_size", size), ("storage_size", count),
                         ("bytes", count * size)):
        if key in out and (isinstance(out[key], bool) or out[key] != implied):
            raise _bad(path, f"{where} ({entry['id']}): tensors.out.{key} is "
                       f"{str(out[key])[:40]}, its dtype and shape say {implied}")
    file = out.get("file", OUT_FILE)
    if not is_safe_id(file):
        raise _bad(path, f"{where} ({entry['id']}): tensors.out.file must be a plain name")


def read_bounded(path: Path, max_bytes: int, want: int | None = None,
                 what: str = "") -> np.ndarray:
    """The bytes of a harness file (uint8), refusing before a byte is read: a link (they
    could point anywhere), a FIFO or device (checked on the open descriptor, opened
    without blocking), a file over `max_bytes`, and one of another size than `want`
    (`what` says why that size). Reads at most the size it checked (a file that grows
    meanwhile is refused)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    not_regular = "not a regular file (links, FIFOs and devices are not read)"
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        reason = not_regular if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror})"
        raise _bad(path, reason) from None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _bad(path, not_regular)
        size = info.st_size
        if size > max_bytes:
            raise _bad(path, f"{size} bytes, over the {max_bytes}-byte limit")
        if want is not None and size != want:
            raise _bad(path, f"{size} bytes, expected {want}" + (f" ({what})" if what else ""))
        data = np.empty(size, np.uint8)
        view, done = memoryview(data), 0
        try:
            while done < size:
                n = fh.readinto(view[done:])
                if not n:
                    break
                done += n
            grew = bool(fh.read(1))
        except OSError as exc:
            raise _bad(path, f"unreadable ({exc.strerror})") from None
    if done != size or grew:
        raise _bad(path, f"changed while read (its size was {size} bytes)")
    return data


def read_status(path: Path) -> tuple[int, str]:
    """(status, message): the first line is the integer status, the rest a message."""
    text = read_bounded(path, MAX_STATUS_BYTES).tobytes().decode("utf-8", errors="replace")
    first, _, rest = text.strip().partition("\n")
    try:
        status = int(first.strip())
    except ValueError:
        raise _bad(path, f"first line must be an integer status, got {first.strip()[:40]!r}"
                   ) from None
    if not -(2**31) <= status < 2**31:
        raise _bad(path, f"status {status} does not fit a 32-bit aclnnStatus")
    return status, rest.strip()


def read_out(path: Path, spec: dict[str, Any], read_limit: int | None = None) -> np.ndarray:
    """out.bin as an array of the manifest's out shape and dtype: its declared size
    checked against the read limit before the file is opened, its size against the
    declaration before a byte is read."""
    limit = default_read_limit() if read_limit is None else read_limit
    shape = tuple(spec["shape"])
    dtype = str(spec["dtype"])
    want = math.prod(shape) * element_size(dtype)
    what = f"{dtype}, shape {'x'.join(map(str, shape)) or 'scalar'}, contiguous"
    if want > limit:
        raise _bad(path, f"the manifest declares {want} bytes ({what}), over the read limit "
                   f"of {limit} bytes (${READ_LIMIT_ENV}); not read")
    return decode_raw(read_bounded(path, limit, want, what), dtype, shape)


def import_inputs(folder: str | Path) -> list[Role]:
    """What `import` reads (aclcheck.store.file_guard): the manifest and every case folder."""
    root = Path(folder)
    roles = [Role("FOLDER", root / MANIFEST)]
    try:
        manifest = read_manifest(root)
    except InputFileError:
        return roles  # import_folder says what is wrong with it
    return roles + [Role("FOLDER", _case_dir(root, e["dir"]), tree=True)
                    for e in manifest["cases"]]


def import_folder(folder: str | Path, *, read_limit: int | None = None) -> ImportResult:
    """Every case's answer in an export folder the harness has filled, as rows read when
    consumed (ImportResult.rows: the manifest is read and checked now).

    status.txt absent -> status 0 when out.bin exists; out.bin is read only for status 0
    (a rejected call leaves out alone); neither file -> the case is listed as missing.
    No file is read past its cap: status.txt MAX_STATUS_BYTES, out.bin the read limit
    (`read_limit`, default $ACLCHECK_MAX_READ_MB or half the memory).
    """
    root = Path(folder)
    manifest = read_manifest(root)
    result = ImportResult(meta={"golden": str(manifest.get("golden", "")),
                                "suite": str(manifest.get("suite", ""))})
    limit = default_read_limit() if read_limit is None else read_limit
    result.rows = _answers(root, manifest, result, limit)
    return result


def _answers(root: Path, manifest: dict[str, Any], result: ImportResult,
             limit: int) -> Iterator[ResultRow]:
    for entry in manifest["cases"]:
        case_dir = _case_dir(root, entry["dir"])
        if case_dir.is_symlink():
            raise _bad(case_dir, "is a link; case folders must be real folders")
        out_spec = entry["tensors"]["out"]
        out_path = case_dir / (out_spec.get("file", OUT_FILE) if out_spec else OUT_FILE)
        status_path = case_dir / STATUS_FILE
        has_out, has_status = out_path.is_file(), status_path.is_file()
        if not has_out and not has_status:
            result.missing.append(entry["id"])
            continue
        status, message = read_status(status_path) if has_status else (0, "")
        output = None
        if status == SUCCESS and has_out and out_spec is not None:
            output = read_out(out_path, out_spec, limit)
        result.count += 1
        result.with_output += output is not None
        yield ResultRow(entry["id"], status, output, 0.0, message)

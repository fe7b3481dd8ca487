"""The HDF5 golden and results store (layout and reader rules in docs/store.md).

One package owns the on-disk layout, so the generator, the inspector, `verify` and any
C++ reader agree on it. Files are plain HDF5 (only the built-in fletcher32 / shuffle /
gzip filters, default library version bounds), written to a temporary file beside the
target and moved into place only when complete. Readers accept only what the writer
produces and turn every problem into an InputFileError whose one-line message names
the file (and the case).

    codec          names and constants, attribute codecs, chunking, run metadata, case ids
    index          the /index entries listing reads (every schema)
    records        case records <-> attributes, what a stored record may hold
    atomic         output-path checks, the temporary-file-then-rename writer, filters
    packed         the packed layout (schema 3): an operator's row schema, case <-> row
    packed_writer  PackedWriter: what GoldenWriter / write_golden are
    packed_reader  PackedFile: schema 3
    packed_check   `inspect --check` of a packed file
    writer         GroupWriter: the group-per-case layout (schema 2; tests, benchmarks)
    h5read         opening a store file, one-line errors, the dataset rules readers apply
    reader         GroupFile (schemas 1, 2), open_golden (any schema) -> GoldenFile
    results        results files (an implementation's outputs)
    check          the full integrity check (`inspect --check`)
    diff           data drift between two golden files (case by case, any schemas)
    exchange    the .bin folder exchange with C/C++ harnesses (docs/bin-exchange.md)
    file_guard  a command's outputs never replace its inputs

Merging shard files lives in aclcheck.suite.merge. The names below are imported from
their modules on first access, so a writer does not import the readers and checks.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aclcheck.errors import OutputFileError
    from aclcheck.store.atomic import check_output_path
    from aclcheck.store.check import (
        CheckReport,
        check_file,
        check_golden,
        check_results,
        is_golden,
        peek_format,
    )
    from aclcheck.store.codec import (
        CASE_ID_RE,
        CHUNK_BYTES,
        COMPRESSIONS,
        EXPECT_ATTRS,
        FORMAT_GOLDEN,
        FORMAT_RESULTS,
        REQUIRED_ROOT_ATTRS,
        SCHEMA_VERSION,
        VOLATILE_ROOT_ATTRS,
        check_ids,
        chunk_shape,
        parse_shape_text,
        run_meta,
        shape_text,
        text_attr,
    )
    from aclcheck.store.dtype_codec import decode_array, dtype_name, encode_array, storage_dtype
    from aclcheck.store.index import IndexEntry, index_columns, index_entry
    from aclcheck.store.packed_writer import PackedWriter as GoldenWriter
    from aclcheck.store.packed_writer import write_packed as write_golden
    from aclcheck.store.reader import GoldenFile, golden_schema, open_golden
    from aclcheck.store.records import record_attrs, record_from_attrs
    from aclcheck.store.results import (
        RESULT_INDEX_COLUMNS,
        ResultRow,
        iter_results,
        read_results,
        results_meta,
        write_results,
    )

#: name -> (module, its name there): what `from aclcheck.store import X` gives, imported
#: on first access (a writer need not import the readers and checks, nor they the writer)
_EXPORTS: dict[str, tuple[str, str]] = {
    **{name: ("aclcheck.store.dtype_codec", name)
       for name in ("decode_array", "dtype_name", "encode_array", "storage_dtype")},
    "OutputFileError": ("aclcheck.errors", "OutputFileError"),
    "check_output_path": ("aclcheck.store.atomic", "check_output_path"),
    **{name: ("aclcheck.store.check", name)
       for name in ("CheckReport", "check_file", "check_golden", "check_results",
                    "is_golden", "peek_format")},
    **{name: ("aclcheck.store.codec", name)
       for name in ("CASE_ID_RE", "CHUNK_BYTES", "COMPRESSIONS", "EXPECT_ATTRS",
                    "FORMAT_GOLDEN", "FORMAT_RESULTS", "REQUIRED_ROOT_ATTRS",
                    "SCHEMA_VERSION", "VOLATILE_ROOT_ATTRS", "check_ids", "chunk_shape",
                    "parse_shape_text", "run_meta", "shape_text", "text_attr")},
    **{name: ("aclcheck.store.index", name)
       for name in ("IndexEntry", "index_columns", "index_entry")},
    "GoldenWriter": ("aclcheck.store.packed_writer", "PackedWriter"),
    "write_golden": ("aclcheck.store.packed_writer", "write_packed"),
    **{name: ("aclcheck.store.reader", name)
       for name in ("GoldenFile", "golden_schema", "open_golden")},
    **{name: ("aclcheck.store.records", name)
       for name in ("record_attrs", "record_from_attrs")},
    **{name: ("aclcheck.store.results", name)
       for name in ("RESULT_INDEX_COLUMNS", "ResultRow", "iter_results", "read_results",
                    "results_meta", "write_results")},
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), attr)


__all__ = [
    "CASE_ID_RE", "CHUNK_BYTES", "COMPRESSIONS", "EXPECT_ATTRS", "FORMAT_GOLDEN",
    "FORMAT_RESULTS", "REQUIRED_ROOT_ATTRS", "RESULT_INDEX_COLUMNS",
    "SCHEMA_VERSION", "VOLATILE_ROOT_ATTRS", "CheckReport", "GoldenFile",
    "GoldenWriter", "IndexEntry", "OutputFileError", "ResultRow", "check_file",
    "check_golden", "check_ids", "check_output_path", "check_results", "chunk_shape",
    "decode_array", "dtype_name", "encode_array", "index_columns", "index_entry", "iter_results",
    "golden_schema", "is_golden", "open_golden", "parse_shape_text", "peek_format",
    "read_results", "record_attrs",
    "record_from_attrs", "results_meta", "run_meta", "shape_text", "storage_dtype",
    "text_attr", "write_golden", "write_results",
]

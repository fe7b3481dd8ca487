"""The HDF5 golden and results store (layout and reader rules in docs/store.md).

One package owns the on-disk layout, so the generator, the inspector, `verify` and any
C++ reader agree on it. Files are plain HDF5 (only the built-in fletcher32 / shuffle /
gzip filters, default library version bounds), written to a temporary file beside the
target and moved into place only when complete. Readers accept only what the writer
produces and turn every problem into an InputFileError whose one-line message names
the file (and the case). Import a name from the module that owns it; importing this
package imports none of them (a writer need not load the readers and checks).

    codec          names and constants, attribute codecs, chunking, run metadata, case ids
    dtype_codec    arrays <-> their stored form (bfloat16 bits, bool bytes)
    index          the /index entries listing reads (every schema)
    records        what a stored case record may hold
    atomic         output-path checks, the temporary-file-then-rename writer, filters
    h5read         opening a store file, one-line errors, the dataset rules readers apply
    golden_schema  the golden layout (schema 3, packed): row schema, case <-> row, id hash
    golden_writer  GoldenWriter, write_golden: every golden file aclcheck writes
    golden_reader  PackedFile: the reader of schema 3
    golden_check   `inspect --check` of a schema-3 file
    legacy/        the group-per-case layout of schemas 1 and 2 (read-only): its reader
                   and check
    results        results files (an implementation's outputs) and their check
    check_report   what an integrity check found
    dispatch       the one place that picks a reader or a check by a file's root:
                   open_golden -> GoldenFile, check_file, is_golden
    diff           data drift between two golden files (case by case, any schemas)
    digest         what a golden file's cases are, as one hash
    exchange       the .bin folder exchange with C/C++ harnesses (docs/bin-exchange.md)
    file_guard     a command's outputs never replace its inputs

Merging shard files lives in aclcheck.suite.merge.
"""

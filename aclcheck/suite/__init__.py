"""Suites: which cases a run makes, and the golden files it writes.

    selection   Selection -> the list of its Cases (products x families x dtypes x formats)
    casefile    case files (TOML/JSON) read and written
    filters     which /index rows of a golden file a command works on
    sharding    K/N slices of a selection, and joining them back
    generate    cases -> tensors -> golden file (optionally in worker processes)
    merge       shard outputs (golden files, verify reports) joined into one
"""

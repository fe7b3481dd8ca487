"""Running: driving cases through an adapter, in this process or in isolated workers.

    config      VerifyConfig: every option of a verify run, and its repro line
    runner      CaseRunner, iter_verdicts: calls, repeats, in order
    parallel    the same over a process pool or a Dask cluster
    live        judge a case made in memory (shrink, hunt)
    remote      where a command's adapter lives; capabilities as plain data
    isolation   the isolated worker: one call at a time, hangs and crashes contained
    workers     where its workers come from (one kept forked ahead) and how they end
    clue_pool   failing cases' diagnosis evidence, computed in a helper beside the run
    wire        the plain-data worker protocol
    zygote      the process workers are forked from (orphans: what it sweeps)
    hangs       when a call is declared hung
    integrity   what an in-process kernel must leave alone in aclcheck's process
"""

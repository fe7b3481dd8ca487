"""Running: driving cases through an adapter, in this process or in isolated workers.

    session     run_verify: one verify run, from its VerifyConfig (config) to its reports
    runner      a case's lifecycle: prepare -> call -> recall -> conclude (the verdict)
    calls       CaseRunner, RunOptions: where a case's calls are made
    schedule    the order cases run in, behind one Schedule: serial, pipelined, fanned out
    readahead   cases read while the adapter loads
    recall      the stale-state check's twin call and findings
    sequences   the sequence stage (--after, calls that change the next answer)
    probing     the failing cases' diagnosis probe
    live        judge a case made in memory (shrink, hunt, a campaign's batch)
    clue_pool   failing cases' diagnosis evidence, computed in a helper beside the run
    integrity   what an in-process kernel must leave alone in aclcheck's process
    workers/    the isolated-worker subsystem, sealed (parent and child sides, zygote, wire)
"""

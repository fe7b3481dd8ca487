"""The isolated-worker subsystem: calls made in worker processes that may crash, hang or
misbehave, sealed here. Outside this folder, import only its public face:

    parent      IsolatedRunner (the parent's side of the calls), Heartbeat, Parked
    lifetime    start_zygote, start_exec_zygote, START_ALLOWANCE_S: where workers come from
    adapter     WorkerAdapter, open_impl, StartingImpl: a command's adapter, opened
    wire        AdapterInfo: what a worker says of its adapter, as plain data
    zygote      Zygote: the process workers are forked from
    hangs       CallClock, HANG_FLOOR_S: when a call is declared hung

The child's side (the worker process) is `child`; `inflight`, `cpu_watch` and `orphans`
serve the parent's side and the zygote.
"""

"""Campaign throughput (issue 25): calls judged per second per worker by `aclcheck hunt
--budget`'s batch loop, in this process and on Dask LocalClusters of 1 and 2 workers,
side by side.

Each setting runs the same campaign (same seed, same calls) into a fresh checkpoint, in
turns, `--rounds` times; the figure is the steady state: the cluster is started and every
worker has judged one warm-up batch (its adapter loaded, its isolated worker forked)
before the clock starts, and shrinking (on the client, after the batches) is not timed.
The run options are hunt's defaults (isolated calls, the stale-state check).

    python benchmarks/bench_campaign.py                          # reference, 3 rounds
    python benchmarks/bench_campaign.py --impl torch --budget 512 --batch 32 --rounds 3
    python benchmarks/bench_campaign.py --setting dask-local:1 --setting dask-local:4

`here` is the command without --executor (batches judged in the command's own process,
one at a time); `dask-local:N` ships BatchTasks (campaign definition + batch number + run
options + the adapter's capabilities: a few hundred bytes) to N worker processes and gets
verdict counts and failing calls' records back.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aclcheck.cli.shrink import live_config
from aclcheck.executors import open_executor
from aclcheck.fanout import slots
from aclcheck.running.live import BatchTask, LiveJudge, judge_batch, judge_calls, live_setup
from aclcheck.running.workers.adapter import WorkerAdapter
from aclcheck.triage.campaign import Campaign
from aclcheck.triage.campaign_run import Inline, run_campaign
from aclcheck.triage.checkpoint import Checkpoint


def measure(setting: str, campaign: Campaign, folder: Path) -> tuple[float, int]:
    """Seconds the campaign's batches took (warm workers) and the workers that ran them."""
    config = live_config(campaign.impl, (), None, None, None, 60.0, campaign.spin_rule)
    opened, opts = live_setup(config)
    info = opened.impl.info if isinstance(opened.impl, WorkerAdapter) else None
    warm = Campaign(**{**campaign.__dict__, "seed": campaign.seed + 1})
    try:
        with LiveJudge(opened.impl, opts, opened.zygote) as judge:
            if setting == "here":
                judge_calls(judge, warm, 0)
                with Checkpoint(folder, campaign) as ckpt:
                    start = time.perf_counter()
                    run_campaign(ckpt, Inline(), lambda b: b,
                                 lambda b: judge_calls(judge, campaign, b), window=1)
                    return time.perf_counter() - start, 1
            with open_executor(1, setting) as pool:
                workers = slots(pool)
                with Checkpoint(folder / "warm", warm) as ckpt:  # one batch per worker
                    run_campaign(ckpt, pool, lambda b: BatchTask(warm, b, opts, info),
                                 judge_batch, window=workers)
                with Checkpoint(folder, campaign) as ckpt:
                    start = time.perf_counter()
                    run_campaign(ckpt, pool, lambda b: BatchTask(campaign, b, opts, info),
                                 judge_batch, window=2 * workers)
                    return time.perf_counter() - start, workers
    finally:
        opened.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--budget", type=int, default=768)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--setting", action="append", default=None,
                        help="here, dask-local:N (repeatable; default here, dask-local:1, "
                             "dask-local:2)")
    args = parser.parse_args(argv)
    settings = args.setting or ["here", "dask-local:1", "dask-local:2"]
    from aclcheck.ops import default_operator

    op = default_operator()
    seconds: dict[str, list[float]] = {s: [] for s in settings}
    workers: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = settings if r % 2 == 0 else settings[::-1]  # load drifts: alternate
            for s in order:
                campaign = Campaign(args.seed, args.budget, args.impl, tuple(op.products), (),
                                    batch=args.batch, op=op.name)
                took, workers[s] = measure(s, campaign, Path(tmp) / f"{s}-{r}")
                seconds[s].append(took)
                print(f"round {r + 1} {s}: {took:.2f} s", file=sys.stderr)
    base = statistics.median(seconds[settings[0]])
    print(f"{args.budget} calls of --impl {args.impl}, batches of {args.batch}, medians of "
          f"{args.rounds} rounds")
    print("| setting | workers | wall s (rounds) | calls/s | calls/s per worker | speed-up |")
    print("|---|---|---|---|---|---|")
    for s in settings:
        med = statistics.median(seconds[s])
        rate = args.budget / med
        print(f"| {s} | {workers[s]} | {med:.2f} ({', '.join(f'{x:.1f}' for x in seconds[s])})"
              f" | {rate:.1f} | {rate / workers[s]:.1f} | {base / med:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

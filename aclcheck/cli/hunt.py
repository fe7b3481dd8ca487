"""`aclcheck hunt`: random valid calls judged on the fly; failures shrunk and saved. With
--budget it is a resumable campaign (aclcheck.cli.hunt_campaign, docs/campaign.md)."""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from aclcheck import options as o
from aclcheck.cases import Case
from aclcheck.cli import hunt_campaign as campaigns
from aclcheck.cli.common import handle_errors, stderr_console, stdout_console
from aclcheck.cli.options import click_option, live_options
from aclcheck.cli.shrink import (
    describe,
    live_config,
    minimal_lines,
    progress_printer,
    repro_commands,
    say,
)
from aclcheck.configfile import content_digest
from aclcheck.dtypes import normalize_dtype
from aclcheck.errors import EXIT_CODES_HELP, EXIT_NONCONFORMANT, EXIT_OK, SuiteError, UsageError
from aclcheck.executors import parse_executor
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.ops import operator
from aclcheck.options import DEFAULT_OPERATOR, OP
from aclcheck.report.files import file_mode
from aclcheck.report.safe_text import printable
from aclcheck.running.config import VerifyConfig
from aclcheck.running.live import LiveJudge, live_setup
from aclcheck.store.atomic import check_output_path
from aclcheck.store.codec import run_meta
from aclcheck.store.file_guard import Role, check_apart
from aclcheck.suite import casefile as casewriter
from aclcheck.suite.generate import generate
from aclcheck.triage.campaign import DEFAULT_BATCH, Campaign, Tally
from aclcheck.triage.checkpoint import (
    JOURNAL_NAME,
    LOCK_NAME,
    OUTCOME_NAME,
    SPEC_NAME,
    Checkpoint,
)
from aclcheck.triage.hunt import search
from aclcheck.triage.shrink import ShrinkResult, shrink

CHECKPOINT_NAME = "checkpoint"

CASES_NAME = "cases.toml"
GOLDEN_NAME = "golden.h5"


def _check_out(folder: Path, force: bool) -> None:
    """Refuse the output folder before any work (exit 2)."""
    if folder.exists():
        if not folder.is_dir():
            raise UsageError(f"-o {folder}: not a folder")
        for name in (CASES_NAME, GOLDEN_NAME):
            check_output_path(folder / name, force)
    else:
        check_output_path(folder, True)  # its parent exists and is writable


def _names(values: tuple[str, ...], normalize, valid, what: str) -> list[str]:
    """The canonical names (SuiteError for unknown ones, or names outside `valid`)."""
    out = []
    for v in values:
        name = normalize(v)
        if name not in valid:
            raise SuiteError(f"unknown {what} {v!r}; valid: {', '.join(valid)}")
        out.append(name)
    return out


@click.command("hunt", epilog=EXIT_CODES_HELP)
@live_options
@click_option(OP)
@click.option("--product", multiple=True, metavar="NAME",
              help="Only this product (repeatable; default: all).")
@click.option("--dtype", multiple=True, metavar="NAME",
              help="Only this dtype (repeatable; default: every dtype of the products).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the random calls (same seed, same calls).")
@click.option("--failures", type=click.IntRange(min=1), default=1, show_default=True,
              help="Stop after this many failing calls (without --budget).")
@click.option("--budget", type=click.IntRange(min=1), default=None, metavar="N",
              help="A campaign of N random calls in all (no time limit): batches spread "
                   "over --executor's workers, every distinct failure shrunk and written; "
                   "resumable (--checkpoint); a larger N on the same checkpoint extends it.")
@click.option("--checkpoint", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help=f"The campaign's checkpoint folder (default OUTPUT/{CHECKPOINT_NAME}): "
                   "rerun the same command to resume where it stopped.")
@click.option("--batch", type=click.IntRange(min=1), default=DEFAULT_BATCH,
              show_default=True, metavar="N", help="Calls per batch of a campaign (one "
                                                   "task on a worker, one journal line).")
@click_option(o.EXECUTOR)
@click.option("--shrink-time", type=click.FloatRange(min=0.0), default=30.0,
              show_default=True, metavar="S", help="Time limit of each shrink.")
@click.option("-o", "--output", "output", required=True, type=click.Path(file_okay=False),
              help=f"Folder for the found cases: {CASES_NAME} and {GOLDEN_NAME}.")
@click.option("--force", is_flag=True, help="Overwrite the folder's files.")
@handle_errors
def hunt(impl: str, standards: tuple[str, ...], tolerances: str | None,
         accumulate: str | None, isolate: bool | None, timeout: float, spin_rule: str,
         max_time: float, op: str,
         product: tuple[str, ...], dtype: tuple[str, ...], seed: int, failures: int,
         budget: int | None, checkpoint: str | None, batch: int, executor: str | None,
         shrink_time: float, output: str, force: bool) -> None:
    """Judge random valid calls (shapes with divisible, non-divisible and upsampling
    windows, every layout and value distribution, special values) against the float64
    reference, with no golden file, until a call fails or --max-time passes. Each
    failure is shrunk to a minimal case, and written to OUTPUT as a case file and a
    golden file, ready to join the regression suite. Exits 1 when something failed.

    With --budget N it is a campaign: N calls in all, in batches over --executor's
    workers (default: this process), each batch journaled in --checkpoint as it comes
    back; interrupted and rerun, it resumes where it stopped. Every distinct failure (by
    verdict, rule and diagnosis) is shrunk and written (docs/campaign.md).

    \b
    Examples:
      aclcheck hunt --impl mykernels:backward --max-time 120 -o found/
      aclcheck hunt --impl torch --product atlas-a2 --dtype bf16 --seed 7 -o found/
      aclcheck hunt --impl mykernels:backward --budget 20000 --executor dask-local:4 -o found/
      aclcheck hunt --impl torch --budget 1000000 --checkpoint ckpt/ \\
          --executor dask://10.0.0.5:8786 -o found/
    """
    folder = Path(output)
    if budget is None and (checkpoint or executor):
        flag = "--checkpoint" if checkpoint else "--executor"
        raise UsageError(f"{flag} belongs to a campaign: add --budget N (calls in all)")
    where, mode = Path(os.path.abspath(folder)), file_mode()  # before any kernel code
    ckpt = None if budget is None else Path(os.path.abspath(checkpoint or
                                                            where / CHECKPOINT_NAME))
    # a campaign's checkpoint may own the files -o holds: they are judged once it is open
    begun = ckpt is not None and os.path.lexists(ckpt / SPEC_NAME)
    _check_out(folder, force or begun)
    case_path, golden_path = folder / CASES_NAME, folder / GOLDEN_NAME
    config = live_config(impl, standards, tolerances, accumulate, isolate, timeout, spin_rule)
    check_apart(config.file_roles()[0], [Role("-o", case_path), Role("-o", golden_path)])
    if ckpt is not None:
        _check_checkpoint(ckpt, [where / CASES_NAME, where / GOLDEN_NAME],
                          config.file_roles()[0])
    chosen = operator(op)  # before any kernel code: a bad name is a usage error
    op_flag = "" if chosen.name == DEFAULT_OPERATOR else f" --op {chosen.name}"
    products = _names(product, str, tuple(chosen.products), "product") or list(chosen.products)
    dtypes = _names(dtype, normalize_dtype, chosen.dtypes, "dtype")
    if budget is not None and ckpt is not None:
        if executor:
            parse_executor(executor)  # a malformed --executor before any kernel code
        definition = Campaign(seed, budget, impl, tuple(products), tuple(dtypes),
                              tuple(standards), accumulate, batch, chosen.name, tolerances,
                              spin_rule, tolerances_digest=None if tolerances is None else
                              content_digest("--tolerances", tolerances))
        _campaign(definition, config, ckpt, executor, shrink_time, where, mode, op_flag,
                  force=force, begun=begun)
    opened, opts = live_setup(config)
    adapter = opened.impl
    out, err = stdout_console(), stderr_console()
    found = []
    started = time.monotonic()
    try:
        with LiveJudge(adapter, opts, opened.zygote) as judge:
            result = search(judge, chosen.space, np.random.default_rng(seed), products, dtypes,
                            max_time=max_time, failures=failures,
                            progress=progress_printer(err, "hunting"))
            if err.is_terminal:
                err.print()
            say(out, f"aclcheck: {result.tries} random calls in {result.seconds:.1f} s, "
                     f"{len(result.found)} failing, {result.skipped} skipped")
            for case, verdict in result.found:
                say(out, f"found: {case.id}: {verdict.verdict.value} - {verdict.message}")
                shrunk = shrink(case, judge, max_time=shrink_time, first=verdict,
                                progress=progress_printer(err, "shrinking"))
                if err.is_terminal:
                    err.print()
                say(out, describe(shrunk))
                for line in minimal_lines(judge, shrunk):
                    say(out, line)
                found.append((chosen.space.renamed(shrunk.minimal, f"hunt{len(found)}"), verdict,
                              shrunk))
            calls = judge.calls
    finally:
        opened.close()
    say(out, f"aclcheck: hunt made {calls} calls in {time.monotonic() - started:.1f} s "
             f"({result.tries} random, {calls - result.tries} shrinking and printing)")
    if not result.judged:  # as verify's gate: nothing judged is not a pass
        click.echo(printable(f"aclcheck: gate failed: no call was judged: all "
                             f"{result.tries} random calls were SKIP or MISTRUSTED under "
                             f"{adapter.name} (its declared dtypes and products, or "
                             "--product / --dtype)"), err=True)
        raise SystemExit(EXIT_NONCONFORMANT)
    if not found:
        say(out, "aclcheck: nothing failed" + (" before the time limit" if result.timed_out
                                               else ""))
        raise SystemExit(EXIT_OK)
    _write(where, mode, found, adapter.name, config, chosen.name,
           f"aclcheck hunt{op_flag} --seed {seed}", f"hunt-seed{seed}")
    raise SystemExit(EXIT_NONCONFORMANT)


def _check_checkpoint(ckpt: Path, outputs: list[Path], inputs: list[Role]) -> None:
    """Before any call (exit 2): the checkpoint folder apart from the files -o writes
    (neither inside the other) and from the command's inputs."""
    real = Path(os.path.realpath(ckpt))
    for path in outputs:
        target = Path(os.path.realpath(path))
        if target.is_relative_to(real) or real.is_relative_to(target):
            where = ("the checkpoint folder itself" if target == real else
                     "inside the checkpoint folder" if target.is_relative_to(real) else
                     "a file the checkpoint folder would lie in")
            raise UsageError(f"--checkpoint {ckpt} and -o {path.parent}: -o writes {path}, "
                             f"{where}: keep them apart (another --checkpoint or -o)")
    check_apart(inputs, [Role("--checkpoint", ckpt / name)
                         for name in (SPEC_NAME, JOURNAL_NAME, OUTCOME_NAME, LOCK_NAME)])


def _write(where: Path, mode: int, found: list[tuple[Case, CaseVerdict, ShrinkResult]],
           adapter: str, config: VerifyConfig, op: str, command: str, suite: str) -> None:
    """Write the minimal cases as a case file and its golden file, and say how to verify
    them as regression cases."""
    where.mkdir(exist_ok=True)
    case_path, golden_path = where / CASES_NAME, where / GOLDEN_NAME
    cases = [c for c, _, _ in found]
    comments = [f"found by {command} ({v.verdict.value} under {adapter}): "
                f"{s.verdict.message}" for _, v, s in found]
    casewriter.write_case_file(case_path, casewriter.toml_file(cases, suite, comments),
                               mode, op)
    generate(golden_path, cases, run_meta(command, suite), force=True)
    out = stdout_console()
    out.print(f"wrote {case_path} and {golden_path} ({len(cases)} case(s))", markup=False,
              highlight=False)
    regression = replace(config, golden=str(golden_path))
    out.print("regression: " + shlex.join(regression.repro_args()), markup=False,
              highlight=False, soft_wrap=True)
    for case in cases:
        out.print("repro: " + repro_commands(str(case_path), str(golden_path), case.id,
                                             config, op),
                  markup=False, highlight=False, soft_wrap=True)


def _campaign(definition: Campaign, config: VerifyConfig, folder: Path, executor: str | None,
              shrink_time: float, where: Path, mode: int, op_flag: str, *, force: bool,
              begun: bool) -> None:
    """Run (or resume, or extend) a campaign, shrink and write its distinct failures;
    exits. A finished one says where its found cases are, judging nothing."""
    chosen = operator(definition.op)
    out, err = stdout_console(), stderr_console()
    paths = [where / CASES_NAME, where / GOLDEN_NAME]
    with Checkpoint(folder, definition) as ckpt:
        say(out, campaigns.resume_line(ckpt))
        if ckpt.complete and not force:
            _finished(ckpt, paths, config)
        if begun:  # -o may hold this campaign's own cases, written before an extension
            _check_out(where, force or ckpt.wrote(paths))
        before = ckpt.tally.calls
        opened, opts = live_setup(config)
        try:
            with LiveJudge(opened.impl, opts, opened.zygote) as judge:
                tally, workers, seconds = campaigns.run_batches(
                    ckpt, judge, opened, opts, executor, out, err, STOP)
                say(out, campaigns.summary_line(tally, ckpt.campaign, workers, seconds,
                                                tally.calls - before))
                found = campaigns.shrink_distinct(tally, chosen, judge, out, err,
                                                  shrink_time)
        finally:
            opened.close()
        if not campaigns.judged_calls(tally):
            _gate_failed(tally, opened.impl.name)
        if not found:
            say(out, "aclcheck: nothing failed")
            raise SystemExit(EXIT_OK)
        campaign = ckpt.campaign
        _write(where, mode, [(f.case, f.first, f.shrunk) for f in found], opened.impl.name,
               config, chosen.name, f"aclcheck hunt{op_flag} --seed {campaign.seed} --budget "
               f"{campaign.budget}", f"hunt-seed{campaign.seed}")
        ckpt.record_outcome(paths)
    raise SystemExit(EXIT_NONCONFORMANT)


def _finished(ckpt: Checkpoint, paths: list[Path], config: VerifyConfig) -> None:
    """A finished campaign run again: its outcome without a call (exits), unless its
    found cases are still to be written here (returns)."""
    tally, out = ckpt.tally, stdout_console()
    if not campaigns.judged_calls(tally):
        _gate_failed(tally, ckpt.campaign.impl)
    if not tally.first:
        say(out, "aclcheck: nothing failed")
        raise SystemExit(EXIT_OK)
    if not ckpt.wrote(paths, this_budget=True):
        return
    say(out, f"aclcheck: its found cases are in {paths[0]} and {paths[1]}, as it wrote "
             "them (--force shrinks and writes them again)")
    regression = replace(config, golden=str(paths[1]))
    say(out, "regression: " + shlex.join(regression.repro_args()))
    raise SystemExit(EXIT_NONCONFORMANT)


def _gate_failed(tally: Tally, impl: str) -> None:
    """As verify's gate: nothing judged is not a pass (exit 1)."""
    click.echo(printable(f"aclcheck: gate failed: no call was judged: all {tally.calls} "
                         f"calls were SKIP or MISTRUSTED under {impl}"), err=True)
    raise SystemExit(EXIT_NONCONFORMANT)


#: stop(tally) after each recorded batch of a campaign: None in use; tests set one that
#: raises KeyboardInterrupt after k batches (an interruption at a known point)
STOP: campaigns.Stop | None = None

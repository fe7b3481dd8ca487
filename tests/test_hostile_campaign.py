"""Red team, campaign side: a checkpoint folder of `aclcheck hunt --budget N --checkpoint
DIR` is untrusted data (docs/campaign.md, "What a checkpoint may claim"). Each probe
tampers with one (a journal without its campaign record, a record of another command, a
FIFO, a link, an oversized or forged journal line, a checkpoint placed where an output
goes) and asserts the exit code (2: the command disagrees with the folder; 3: a damaged
file, named) before any adapter is loaded; then a finished campaign run again or
extended. FIFO and /dev/zero probes run the command in a subprocess with a generous
timeout only as a guard: they must fail fast."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aclcheck.cli import hunt as hunt_cli
from aclcheck.triage import checkpoint as checkpoint_module
from aclcheck.triage.campaign import BatchResult, Campaign, Tally, call_case
from aclcheck.triage.checkpoint import JOURNAL_NAME, LOCK_NAME, OUTCOME_NAME, SPEC_NAME

CliRun = Callable[..., tuple[int, str]]
BROKEN = "kernels_zoo:end_floor"  # window end floor((i+1)*I/O) instead of ceil
A2_FP32 = ("--product", "atlas-a2", "--dtype", "float32")
#: the campaign of `_base` (budget 16, batches of 8), as the checkpoint holds it
CAMPAIGN = Campaign(seed=0, budget=16, impl="reference", products=("atlas-a2",),
                    dtypes=("float32",), batch=8)
#: seconds a subprocess probe may take before it counts as blocked (a guard, not a timing)
GUARD_S = 120


def _base(tmp_path: Path, *extra: str, budget: int = 16) -> tuple[str, ...]:
    return ("hunt", "--budget", str(budget), "--batch", "8", *A2_FP32, "--shrink-time", "5",
            "--checkpoint", str(tmp_path / "ckpt"), "-o", str(tmp_path / "found"), *extra)


@pytest.fixture
def finished(cli_run: CliRun, tmp_path: Path) -> Path:
    """A finished reference campaign's checkpoint (nothing failed)."""
    code, text = cli_run(*_base(tmp_path))
    assert code == 0 and "nothing failed" in text, text
    return tmp_path / "ckpt"


@pytest.fixture
def no_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on the command must not load an adapter (so it makes no call)."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an adapter was loaded")
    monkeypatch.setattr(hunt_cli, "live_setup", refuse)


def _error(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("aclcheck: error:")]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def _journal(folder: Path) -> list[BatchResult]:
    return [BatchResult.from_json(json.loads(line))
            for line in (folder / JOURNAL_NAME).read_text().splitlines()]


# -- 1. a checkpoint that does not match the command -----------------------------------------


def test_a_journal_without_its_campaign_record_is_refused(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest) -> None:
    (finished / SPEC_NAME).unlink()  # the journal of the reference, under another kernel
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path, "--impl", BROKEN))
    assert code == 3, text
    line = _error(text)
    assert str(finished / JOURNAL_NAME) in line and SPEC_NAME in line and "folder" in line
    assert not (finished / SPEC_NAME).exists()


@pytest.mark.parametrize(("other", "said"), [
    (("--impl", BROKEN), f"impl {BROKEN!r}, the checkpoint's 'reference'"),
    (("--seed", "9"), "seed 9, the checkpoint's 0"),
    (("--op", "aapool3d-bwd"), "op 'adaptive_avg_pool3d_backward'"),
    (("--standard", "cann-mixed"), "standards ('cann-mixed',), the checkpoint's ()"),
    (("--accumulate", "input"), "accumulate 'input', the checkpoint's None"),
    (("--product", "atlas-a3"), "products ('atlas-a2', 'atlas-a3')"),
    (("--dtype", "float16"), "dtypes ('float32', 'float16')"),
    (("--batch", "4"), "batch 4, the checkpoint's 8"),
    (("--spin-rule", "all"), "spin_rule 'all', the checkpoint's 'rejected'"),
    (("--tolerances", "TOLERANCES"), "tolerances '"),
])
def test_a_campaign_record_of_another_command_is_refused_naming_the_field_and_command(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest,
        other: tuple[str, ...], said: str) -> None:
    tolerances = tmp_path / "tolerances.toml"
    tolerances.write_text("[aclcheck]\n")
    request.getfixturevalue("no_calls")
    other = tuple(str(tolerances) if a == "TOLERANCES" else a for a in other)
    code, text = cli_run(*_base(tmp_path, *other))
    assert code == 2, text
    line = _error(text)
    assert "holds another campaign" in line and said in line, line
    made_by = (f"aclcheck hunt --impl reference --seed 0 --budget 16 --batch 8 "
               f"--product atlas-a2 --dtype float32 --checkpoint {finished}")
    assert made_by in line and "another folder" in line, line


def test_a_tolerance_file_changed_under_its_name_is_another_campaign(
        cli_run: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign records its tolerance file by content: the same path holding other
    tolerances cannot resume it (its recorded verdicts were judged under the old ones)."""
    tolerances = tmp_path / "tolerances.toml"
    tolerances.write_text("[aclcheck]\n")
    code, text = cli_run(*_base(tmp_path, "--tolerances", str(tolerances)))
    assert code == 0, text
    tolerances.write_text("# edited\n[aclcheck]\n")
    monkeypatch.setattr(hunt_cli, "live_setup", lambda *a, **k: pytest.fail("a call"))
    code, text = cli_run(*_base(tmp_path, "--tolerances", str(tolerances)))
    assert code == 2 and "tolerances_digest 'blake2b:" in _error(text), text


def _edit_spec(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def apply(spec: Path) -> None:
        data = json.loads(spec.read_text())
        result = edit(data)
        spec.write_text(json.dumps(data if result is None else result))
    return apply


SPEC_DAMAGE: dict[str, Callable[[Path], None]] = {
    "seed a boolean": _edit_spec(lambda d: d.update(seed=True)),
    "budget a float": _edit_spec(lambda d: d.update(budget=16.5)),
    "products a string": _edit_spec(lambda d: d.update(products="atlas-a2")),
    "an unknown field": _edit_spec(lambda d: d.update(shell="rm -rf /")),
    "a list": _edit_spec(lambda d: [d]),
    "an older version": _edit_spec(lambda d: d.update(version=1)),
    "nested deeply": lambda spec: spec.write_text("[" * 50_000 + "]" * 50_000),
    "padded past the limit": lambda spec: spec.write_text(spec.read_text() + " " * (1 << 20)),
    "not UTF-8": lambda spec: spec.write_bytes(b"\xff\xfe{}"),
}


@pytest.mark.parametrize("damage", SPEC_DAMAGE)
def test_a_damaged_campaign_record_is_an_unreadable_file(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest,
        damage: str) -> None:
    SPEC_DAMAGE[damage](finished / SPEC_NAME)
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 3, text
    assert str(finished / SPEC_NAME) in _error(text)


# -- 2. FIFOs, links and devices in place of checkpoint files -------------------------------


def _run_guarded(*args: str, memory: int | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess; `memory`: its address-space cap in bytes."""
    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-m", "aclcheck", *args], capture_output=True,
                          text=True, timeout=GUARD_S, preexec_fn=limit)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", [JOURNAL_NAME, LOCK_NAME, SPEC_NAME])
def test_a_fifo_in_the_checkpoint_is_refused_at_once(
        tmp_path: Path, finished: Path, name: str) -> None:
    (finished / name).unlink()
    os.mkfifo(finished / name)
    proc = _run_guarded(*_base(tmp_path))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert str(finished / name) in _error(proc.stderr) and "regular file" in proc.stderr


def test_a_journal_linked_to_dev_zero_is_not_read(tmp_path: Path, finished: Path) -> None:
    (finished / JOURNAL_NAME).unlink()
    (finished / JOURNAL_NAME).symlink_to("/dev/zero")
    proc = _run_guarded(*_base(tmp_path), memory=4 << 30)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert str(finished / JOURNAL_NAME) in _error(proc.stderr)


@pytest.mark.parametrize("name", [JOURNAL_NAME, SPEC_NAME, LOCK_NAME])
def test_a_checkpoint_file_that_is_a_symbolic_link_is_refused(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest,
        name: str) -> None:
    elsewhere = tmp_path / f"elsewhere-{name}"
    (finished / name).rename(elsewhere)  # the same content, reached through a link
    (finished / name).symlink_to(elsewhere)
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 3, text
    assert str(finished / name) in _error(text) and "link" in text


def test_a_journal_with_another_name_is_not_appended_to(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest) -> None:
    victim = tmp_path / "victim.jsonl"  # a file of the user's, reached through a hard link
    (finished / JOURNAL_NAME).unlink()
    victim.write_text("")
    os.link(victim, finished / JOURNAL_NAME)
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 3, text
    assert str(finished / JOURNAL_NAME) in _error(text) and "hard link" in text
    assert victim.read_text() == ""


def test_a_forged_outcome_record_is_an_unreadable_file(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest) -> None:
    (finished / OUTCOME_NAME).write_text(json.dumps(
        {"version": 1, "budget": 16, "files": {"/etc/passwd": "mine"}}))
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 3, text
    assert str(finished / OUTCOME_NAME) in _error(text)


def test_a_journal_over_its_size_limit_is_refused(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    size = (finished / JOURNAL_NAME).stat().st_size
    monkeypatch.setattr(checkpoint_module, "MAX_JOURNAL_BYTES", size - 1)
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 3, text
    assert str(finished / JOURNAL_NAME) in _error(text) and "limit" in text
    assert (finished / JOURNAL_NAME).stat().st_size == size  # never truncated


# -- 3. forged journal lines ------------------------------------------------------------------


def _failing(record: dict[str, Any], index: int = 0, **changes: Any) -> dict[str, Any]:
    """Batch 0's line with call `index` failing with `record`."""
    failure = {"index": index, "record": record, "verdict": "FAIL",
               "key": "FAIL|0-valid|window-end-floor", "message": "off", **changes}
    return {"batch": 0, "counts": {"PASS": 7, "FAIL": 1}, "seconds": 0.1,
            "failures": [failure]}


def _record(i: int = 0, **changes: Any) -> dict[str, Any]:
    return json.loads(json.dumps({**call_case(CAMPAIGN, i).to_record(), **changes}))


LINE_DAMAGE: dict[str, Callable[[], Any]] = {
    "a 2^31 x 2^31 shape": lambda: _failing(_record(
        self_shape=[1, 2**31, 2**31], grad_shape=[1, 2**31, 2**31], format="NCL")),
    "an unknown product": lambda: _failing(_record(product="atlas-z9")),
    "another call's record": lambda: _failing(_record(1)),
    "an index outside the batch": lambda: _failing(_record(12), index=12),
    "a passing verdict": lambda: _failing(_record(), verdict="PASS"),
    "a message of 100 000 characters": lambda: _failing(_record(), message="x" * 100_000),
    "a key that is a number": lambda: _failing(_record(), key=7),
    "an unknown field": lambda: {**_failing(_record()), "extra": 1},
    "the batch a boolean": lambda: {"batch": True, "counts": {"PASS": 8}, "failures": []},
    "a negative count": lambda: {"batch": 0, "counts": {"PASS": 16, "FAIL": -8},
                                 "failures": []},
    "counts not the batch's calls": lambda: {"batch": 0, "counts": {"PASS": 9},
                                             "failures": []},
    "an unknown verdict": lambda: {"batch": 0, "counts": {"GREAT": 8}, "failures": []},
    "failing counts without failures": lambda: {"batch": 0,
                                                "counts": {"PASS": 7, "FAIL": 1},
                                                "failures": []},
    "seconds NaN": lambda: {"batch": 0, "counts": {"PASS": 8}, "failures": [],
                            "seconds": float("nan")},
    "a list": lambda: [0, {"PASS": 8}],
}


@pytest.mark.parametrize("damage", LINE_DAMAGE)
def test_a_forged_journal_line_is_a_damaged_file_naming_the_line(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest,
        damage: str) -> None:
    journal = finished / JOURNAL_NAME
    lines = journal.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line)["batch"] == 0)
    lines[first] = json.dumps(LINE_DAMAGE[damage]())
    journal.write_text("\n".join(lines) + "\n")
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 3, text
    assert f"{journal}: line {first + 1}:" in _error(text)


# -- 4. a checkpoint where an output goes ----------------------------------------------------


@pytest.mark.parametrize("where", ["found/cases.toml", "found/golden.h5/ckpt", "found",
                                   "."])
def test_a_checkpoint_in_the_way_of_the_outputs_is_refused_before_any_call(
        cli_run: CliRun, tmp_path: Path, no_calls: None, where: str) -> None:
    ckpt = tmp_path / where
    code, text = cli_run("hunt", "--budget", "16", "--batch", "8", *A2_FP32, "--impl", BROKEN,
                         "--checkpoint", str(ckpt), "-o", str(tmp_path / "found"))
    assert code == 2, text
    assert "--checkpoint" in _error(text) and "-o" in _error(text)
    assert not (tmp_path / "found").exists()


# -- 5. a finished campaign run again, extended --------------------------------------------


def test_a_finished_campaign_run_again_says_where_its_cases_are(
        cli_run: CliRun, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    args = _base(tmp_path, "--impl", BROKEN)
    code, text = cli_run(*args)
    assert code == 1 and "wrote" in text, text
    cases = tmp_path / "found" / "cases.toml"
    written = cases.read_bytes()
    request.getfixturevalue("no_calls")
    code, text = cli_run(*args)
    assert code == 1, text
    assert "complete" in text and str(cases) in text and "error" not in text, text
    assert cases.read_bytes() == written


def test_a_finished_campaign_that_found_nothing_says_so_again(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path))
    assert code == 0, text
    assert "complete" in text and "nothing failed" in text, text


def test_a_larger_budget_extends_a_finished_campaign_judging_only_the_new_calls(
        cli_run: CliRun, tmp_path: Path) -> None:
    code, text = cli_run(*_base(tmp_path, "--impl", BROKEN, budget=12))  # batches 8 + 4
    assert code == 1, text
    code, text = cli_run(*_base(tmp_path, "--impl", BROKEN, budget=28))  # its own -o files
    assert code == 1, text
    assert "extending the campaign" in text and "this run: 16 calls" in text, text
    journal = _journal(tmp_path / "ckpt")
    tally = Tally()
    assert all(tally.add(r) for r in journal) and tally.calls == 28
    assert [sum(r.counts.values()) for r in journal] == [8, 4, 8, 8]
    code, text = cli_run(*_base(tmp_path, "--impl", BROKEN, budget=28))
    assert code == 1 and "complete" in text, text


def test_a_smaller_budget_than_the_checkpoints_is_refused(
        cli_run: CliRun, tmp_path: Path, finished: Path, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("no_calls")
    code, text = cli_run(*_base(tmp_path, budget=8))
    assert code == 2, text
    line = _error(text)
    assert "--budget 8" in line and "16 calls" in line and "cannot shrink" in line, line

"""The verdict spool (judging.gate.spool): a run's verdicts on disk read back as they were
written, and a run's reports the same whether its verdicts are spooled or kept in a list.
How much memory that saves is benchmarks/'s (bench_scale.py --part rss-verify)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.cli import verify as verify_cli
from aclcheck.judging.case.hints import Hint
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.gate import spool as spool_module
from aclcheck.judging.gate.spool import Mapped, VerdictSpool

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden" / "ci-suite.h5"


def sample(n: int) -> CaseVerdict:
    """Verdicts of every kind, with texts of every size (some larger than a read block)."""
    kinds = list(Verdict)
    return CaseVerdict(
        case_id=f"case-{n:04d}", verdict=kinds[n % len(kinds)], message="why " * (n % 7),
        product="atlas-a2", dtype="float16", format="ND", family="nondivisible",
        detail="x" * (n * 37 % 5000), metrics={"max_ulp": float(n), "ok": n % 2 == 0,
                                               "bad": None, "text": "inf"},
        standards={"aclcheck": n % 3 == 0}, notes=tuple(f"note {i}" for i in range(n % 4)),
        expected_status=None if n % 5 else 161002, actual_status=n, time_s=n / 7,
        repro=f"aclcheck verify s.h5 --id case-{n:04d}", index=n,
        hints=(Hint(None, "a hint"),) if n % 2 else (), divergence="d" if n % 9 == 0 else None)


def test_spool_reads_back_what_was_appended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool_module, "_CHUNK", 256)  # many block refills, records span them
    written = [sample(n) for n in range(300)]
    with VerdictSpool() as spool:
        assert len(spool) == 0 and list(spool) == []
        for v in written:
            spool.append(v)
        assert len(spool) == len(written)
        read = list(spool)
        assert read == written
        # the fields equality leaves out survive too
        assert [(v.hints, v.divergence) for v in read] == \
               [(v.hints, v.divergence) for v in written]
        assert [v.to_json() for v in spool] == [v.to_json() for v in written]
        assert spool[0] == written[0] and spool[-1] == written[-1]
        assert spool[10:13] == written[10:13]
        assert spool.index(written[42]) == 42  # Sequence's mixins work on it
        with pytest.raises(IndexError):
            spool[len(written)]
        spool.append(sample(300))  # appending after reading
        assert spool[-1] == sample(300) and len(list(spool)) == 301


def test_mapped_view_applies_its_function_when_read() -> None:
    view = Mapped([1, 2, 3], lambda x: x * 10)
    assert len(view) == 3 and list(view) == [10, 20, 30]
    assert view[1] == 20 and view[-1] == 30 and view[:2] == [10, 20]


def _reports(folder: Path, monkeypatch: pytest.MonkeyPatch, spooled: bool) -> dict[str, str]:
    """The reports and console of one run (a failing kernel, known failures listed) with
    its timings masked; the same command line in its own folder."""
    folder.mkdir()
    (folder / "known.toml").write_text('[[xfail]]\nid = "*fp16*"\nreason = "listed"\n')
    monkeypatch.chdir(folder)
    if not spooled:
        monkeypatch.setattr(verify_cli, "VerdictSpool", lambda: contextlib.nullcontext([]))
    args = ["verify", str(GOLDEN), "--impl", f"{ROOT / 'tests' / 'kernels_zoo.py'}:end_floor",
            "--no-isolate", "--product", "atlas-a2", "--dtype", "float16", "--dtype", "float32",
            "--xfail", "known.toml", "--json", "r.json", "--junit", "r.xml",
            "--html", "r.html", "-v", "--width", "160"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    out = {name: (folder / name).read_text() for name in ("r.json", "r.xml", "r.html")}
    out["console"] = result.output
    for name, text in out.items():
        text = re.sub(r'"time_s": [0-9.e+-]+', '"time_s": T', text)
        text = re.sub(r'time="[0-9.]+"', 'time="T"', text)
        out[name] = re.sub(r'data-v="[0-9.e+-]+">[0-9.]+</td>\n  </tr>', "T</td></tr>", text)
    return out


def test_reports_are_the_same_whether_verdicts_are_spooled_or_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spooled = _reports(tmp_path / "spooled", monkeypatch, spooled=True)
    with monkeypatch.context() as m:
        listed = _reports(tmp_path / "listed", m, spooled=False)
    assert '"verdict": "XFAIL"' in spooled["r.json"] and '"verdict": "FAIL"' in spooled["r.json"]
    assert '"verdict": "PASS"' in spooled["r.json"]
    for name in spooled:
        assert spooled[name] == listed[name], name

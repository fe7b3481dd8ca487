"""Red team, between runs: shard reports that do not belong together, and .bin folders that
declare more than aclcheck may read.

Merge: shards of two golden files with one name and one case count (a 2D and a 3D suite),
a shard without the golden file's digest, shards of commands that judge differently (an
option the repro line carries, a known-failure list edited between two shards), hostile
digest and option fields; the digest itself (a copy, a regeneration, another seed, the
older schemas). Import: an out.bin the manifest declares past the read limit (a sparse
8 GiB file, 2D and 3D operator), an out.bin of another size, a manifest that contradicts
itself, a manifest and a status.txt past their caps.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import pytest

from aclcheck.store import exchange
from aclcheck.store.digest import golden_digest
from aclcheck.store.dispatch import open_golden
from tests.legacy_writer import write_groups

#: the `cli_run` fixture: run the CLI in-process -> (exit code, output)
CliRun = Callable[..., tuple[int, str]]

FAST = ("--no-isolate",)  # the reports are under test here, not the calls
#: 6 cases each, and shard 1/2 of the first plus shard 2/2 of the second hold 6 cases:
#: every check merge had before the digest passes for such a pair
SUITE_2D = ("--product", "atlas-a2", "--dtype", "float16", "--family", "nondivisible",
            "--count", "2", "--seed", "4")
SUITE_3D = ("--op", "aapool3d-bwd", "--product", "atlas-a2", "--dtype", "float16",
            "--family", "global", "--count", "3", "--seed", "4")
V1_SUITE = Path(__file__).resolve().parent / "data" / "v1-suite.h5"
SPARSE = 8 << 30  # the size of the sparse files (nothing is written: truncate)


def generate(cli_run: CliRun, path: Path, *args: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    code, out = cli_run("generate", "-o", str(path), *args)
    assert code == 0, out
    return path


@pytest.fixture(scope="module")
def suites(cli_run: CliRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two golden files named suite.h5, in folders 2d/ and 3d/: another operator, other
    data, the same case count."""
    root = tmp_path_factory.mktemp("suites")
    return {"2d": generate(cli_run, root / "2d" / "suite.h5", *SUITE_2D),
            "3d": generate(cli_run, root / "3d" / "suite.h5", *SUITE_3D)}


def shard_report(cli_run: CliRun, golden: Path, shard: str, out: Path, *args: str) -> Path:
    """`verify suite.h5 --shard K/N --json OUT` run from the golden file's folder, so every
    report names its golden file alike ("suite.h5")."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(golden.parent)
        code, text = cli_run("verify", golden.name, *FAST, "--shard", shard,
                             "--json", str(out), *args)
    assert code in (0, 1) and out.exists(), text
    return out


@pytest.fixture(scope="module")
def shards(cli_run: CliRun, suites: dict[str, Path],
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Shards 1/2 and 2/2 of the 2D suite, 2/2 of the 3D suite, default options."""
    folder = tmp_path_factory.mktemp("shards")
    return {"2d-1": shard_report(cli_run, suites["2d"], "1/2", folder / "2d-1.json"),
            "2d-2": shard_report(cli_run, suites["2d"], "2/2", folder / "2d-2.json"),
            "3d-2": shard_report(cli_run, suites["3d"], "2/2", folder / "3d-2.json")}


def merged(cli_run: CliRun, tmp_path: Path, *paths: Path) -> tuple[int, str]:
    return cli_run("merge", "-o", str(tmp_path / "merged.json"), "--force",
                   *map(str, paths))


def edited(source: Path, target: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(source.read_text())
    change(data)
    target.write_text(json.dumps(data))
    return target


def error_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("aclcheck: error:")]


# -- A. shards of one golden file, by content, and of one command ------------------------------


def test_shards_of_two_golden_files_with_one_name_and_count_are_refused(
        cli_run: CliRun, shards: dict[str, Path], tmp_path: Path) -> None:
    one, other = (json.loads(shards[k].read_text()) for k in ("2d-1", "3d-2"))
    # the attack: everything merge compared before the digest agrees
    assert one["golden"] == other["golden"] == "suite.h5"
    assert one["selected"] == other["selected"] == len(one["cases"]) + len(other["cases"])
    assert (one["implementation"], one["standards"]) == (other["implementation"],
                                                         other["standards"])
    control = cli_run("merge", "-o", str(tmp_path / "control.json"), str(shards["2d-1"]),
                      str(shards["2d-2"]))
    assert control[0] == 0, control[1]
    code, out = merged(cli_run, tmp_path, shards["2d-1"], shards["3d-2"])
    assert code == 2, out
    (line,) = error_lines(out)
    assert "golden_digest" in line and "2d-1.json" in line and "3d-2.json" in line
    assert not (tmp_path / "merged.json").exists()


def test_a_shard_without_a_digest_or_its_options_is_refused(
        cli_run: CliRun, shards: dict[str, Path], tmp_path: Path) -> None:
    for key in ("golden_digest", "verdict_options"):
        old = edited(shards["2d-2"], tmp_path / "old.json", lambda d, k=key: d.pop(k))
        code, out = merged(cli_run, tmp_path, shards["2d-1"], old)
        assert code == 2, (key, out)
        (line,) = error_lines(out)
        assert key in line and "old.json" in line and "rerun" in line, line


@pytest.mark.parametrize("option", [
    ("--timeout", "30"), ("--spin-rule", "all"), ("--accumulate", "float32"),
    ("--overflow-mode", "saturation"), ("--repeat", "2"), ("--deterministic",),
    ("--no-stale-check",), ("--strict-xfail",), ("--isolate",)],
    ids=lambda o: o[0].lstrip("-"))
def test_shards_of_commands_that_judge_differently_are_refused(
        cli_run: CliRun, suites: dict[str, Path], shards: dict[str, Path], tmp_path: Path,
        option: tuple[str, ...]) -> None:
    other = shard_report(cli_run, suites["2d"], "2/2", tmp_path / "other.json", *option)
    code, out = merged(cli_run, tmp_path, shards["2d-1"], other)
    assert code == 2, out
    (line,) = error_lines(out)
    flag = option[0]
    assert flag.replace("--no-", "--") in line and "2d-1.json" in line and "other.json" in line


def test_shards_with_the_same_option_values_merge(
        cli_run: CliRun, suites: dict[str, Path], tmp_path: Path) -> None:
    """The default spelled out is the default: the options are compared as values."""
    one = shard_report(cli_run, suites["2d"], "1/2", tmp_path / "a.json",
                       "--timeout", "60", "--spin-rule", "rejected")
    two = shard_report(cli_run, suites["2d"], "2/2", tmp_path / "b.json")
    code, out = merged(cli_run, tmp_path, one, two)
    assert code == 0, out
    report = json.loads((tmp_path / "merged.json").read_text())
    first = json.loads(one.read_text())
    assert report["golden_digest"] == first["golden_digest"]
    assert report["verdict_options"] == first["verdict_options"]


def test_lists_edited_between_shards_are_refused_by_content(
        cli_run: CliRun, suites: dict[str, Path], tmp_path: Path) -> None:
    """--xfail and --tolerances: one path, other content."""
    for flag, name, before, after in (
            ("--xfail", "known.toml", '[[xfail]]\nid = "none*"\nreason = "r"\n',
             '[[xfail]]\nid = "*"\nreason = "everything"\n'),
            ("--tolerances", "tol.toml", "[aclcheck]\nc = 2\n", "[aclcheck]\nc = 2000\n")):
        listed = tmp_path / name
        listed.write_text(before)
        one = shard_report(cli_run, suites["2d"], "1/2", tmp_path / "a.json",
                           flag, str(listed))
        listed.write_text(after)
        two = shard_report(cli_run, suites["2d"], "2/2", tmp_path / "b.json",
                           flag, str(listed))
        code, out = merged(cli_run, tmp_path, one, two)
        assert code == 2, (flag, out)
        (line,) = error_lines(out)
        assert flag in line and "a.json" in line and "b.json" in line, line
        listed.write_text(before)
        two = shard_report(cli_run, suites["2d"], "2/2", tmp_path / "b.json",
                           flag, str(listed))
        assert merged(cli_run, tmp_path, one, two)[0] == 0


@pytest.mark.parametrize("field, value", [
    ("golden_digest", 7), ("golden_digest", "blake2b:xyz"), ("golden_digest", ""),
    ("verdict_options", ["--timeout", "60"]), ("verdict_options", {"timeout": 60}),
    ("verdict_options", {"--timeout": {"a": 1}}), ("verdict_options", {"--x": [1, [2]]})])
def test_hostile_digest_and_option_fields_are_bad_input(
        cli_run: CliRun, shards: dict[str, Path], tmp_path: Path, field: str,
        value: object) -> None:
    bad = edited(shards["2d-2"], tmp_path / "bad.json", lambda d: d.update({field: value}))
    for args in (["diff", str(shards["2d-2"]), str(bad)],
                 ["merge", "-o", str(tmp_path / "m.json"), str(shards["2d-1"]), str(bad)]):
        code, out = cli_run(*args)
        assert code == 3, (args[0], out)
        (line,) = error_lines(out)
        assert "bad.json" in line and field in line, line


def test_the_digest_follows_the_content_not_the_name_or_the_time(
        cli_run: CliRun, suites: dict[str, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def digest(path: Path) -> str:
        with open_golden(path) as gf:
            return golden_digest(gf)

    base = digest(suites["2d"])
    assert base.startswith("blake2b:") and len(base) == len("blake2b:") + 64
    copy = Path(shutil.copy(suites["2d"], tmp_path / "renamed.h5"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    again = generate(cli_run, tmp_path / "again.h5", *SUITE_2D)
    packed = generate(cli_run, tmp_path / "gzip.h5", *SUITE_2D, "--compress", "gzip")
    assert digest(copy) == digest(again) == digest(packed) == base
    seeded = generate(cli_run, tmp_path / "seed.h5", *SUITE_2D[:-1], "5")
    assert len({base, digest(seeded), digest(suites["3d"])}) == 3


def test_the_digest_of_the_older_schemas_covers_their_records(
        suites: dict[str, Path], tmp_path: Path) -> None:
    """Schemas 1 and 2 keep each case's record in its group's attributes: the digest
    reads them (a seed changed in one case is another file)."""
    with open_golden(V1_SUITE) as gf:
        v1 = golden_digest(gf)
    with open_golden(V1_SUITE) as gf:
        assert golden_digest(gf) == v1
    groups = tmp_path / "groups.h5"
    with open_golden(suites["2d"]) as gf:
        write_groups(groups, [(gf.case(cid), gf.data(cid)) for cid in gf.ids()], gf.meta)
        first = gf.ids()[0]
    with open_golden(groups) as gf:
        before = golden_digest(gf)
    with h5py.File(groups, "r+") as f:
        f["cases"][first].attrs["seed"] = int(f["cases"][first].attrs["seed"]) + 1
    with open_golden(groups) as gf:
        after = golden_digest(gf)
    assert len({v1, before, after}) == 3


# -- B. import reads nothing past the read limit --------------------------------------------


@pytest.fixture(scope="module")
def exports(cli_run: CliRun, suites: dict[str, Path],
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Export folders of the 2D and the 3D suite (no harness answers yet)."""
    root = tmp_path_factory.mktemp("exports")
    for op, golden in suites.items():
        code, out = cli_run("export", str(golden), str(root / op))
        assert code == 0, out
    return {op: root / op for op in suites}


def folder_copy(exports: dict[str, Path], op: str, tmp_path: Path) -> tuple[Path, dict]:
    folder = Path(shutil.copytree(exports[op], tmp_path / "xfer"))
    return folder, json.loads((folder / "manifest.json").read_text())


def valid_case(manifest: dict) -> dict:
    return next(c for c in manifest["cases"]
                if c["expected_status"] == 0 and c["tensors"]["out"] is not None)


def sparse(path: Path, size: int = SPARSE) -> Path:
    with path.open("wb") as f:
        f.truncate(size)
    return path


def import_(cli_run: CliRun, folder: Path, tmp_path: Path) -> tuple[int, str]:
    return cli_run("import", str(folder), "-o", str(tmp_path / "board.h5"))


@pytest.mark.parametrize("op", ["2d", "3d"])
def test_an_out_bin_declared_past_the_read_limit_is_refused_unread(
        cli_run: CliRun, exports: dict[str, Path], tmp_path: Path, op: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_MAX_READ_MB", "64")
    folder, manifest = folder_copy(exports, op, tmp_path)
    case = valid_case(manifest)
    out = case["tensors"]["out"]
    rank = len(out["shape"])
    shape = [1] * (rank - 2) + [1 << 16, SPARSE // out["element_size"] >> 16]
    size = math.prod(shape)
    out.update(shape=shape, strides=[math.prod(shape[i + 1:]) for i in range(rank)],
               storage_size=size, bytes=size * out["element_size"])
    (folder / "manifest.json").write_text(json.dumps(manifest))
    out_bin = sparse(folder / case["dir"] / "out.bin")
    code, text = import_(cli_run, folder, tmp_path)
    assert code == 3, text
    (line,) = error_lines(text)
    assert str(out_bin) in line and "read limit" in line and "ACLCHECK_MAX_READ_MB" in line
    assert "MemoryError" not in text and not (tmp_path / "board.h5").exists()


@pytest.mark.parametrize("op", ["2d", "3d"])
def test_an_out_bin_of_another_size_than_declared_is_refused_unread(
        cli_run: CliRun, exports: dict[str, Path], tmp_path: Path, op: str) -> None:
    folder, manifest = folder_copy(exports, op, tmp_path)
    out_bin = sparse(folder / valid_case(manifest)["dir"] / "out.bin")
    code, text = import_(cli_run, folder, tmp_path)
    assert code == 3 and str(out_bin) in text and f"{SPARSE} bytes" in text, text
    assert "MemoryError" not in text


@pytest.mark.parametrize("key, value", [("bytes", 8), ("element_size", 8),
                                        ("storage_size", 1)])
def test_a_manifest_that_contradicts_itself_is_refused(
        cli_run: CliRun, exports: dict[str, Path], tmp_path: Path, key: str,
        value: int) -> None:
    """out.bin's size is what the shape and dtype imply; a manifest whose `bytes`,
    `element_size` or `storage_size` say otherwise is damaged, whatever out.bin holds."""
    folder, manifest = folder_copy(exports, "2d", tmp_path)
    case = valid_case(manifest)
    out = case["tensors"]["out"]
    (folder / case["dir"] / "out.bin").write_bytes(b"\0" * out["bytes"])
    out[key] = value
    (folder / "manifest.json").write_text(json.dumps(manifest))
    code, text = import_(cli_run, folder, tmp_path)
    assert code == 3, text
    (line,) = error_lines(text)
    assert "manifest.json" in line and key in line, line


def test_export_never_writes_a_manifest_import_refuses(
        cli_run: CliRun, exports: dict[str, Path], suites: dict[str, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One cap for both ends: a selection whose manifest would pass it is refused by
    export (exit 2, naming the cap and how to split), never written for import to refuse."""
    size = (exports["2d"] / "manifest.json").stat().st_size
    monkeypatch.setattr(exchange, "MAX_MANIFEST_BYTES", size // 2)
    code, text = cli_run("export", str(suites["2d"]), str(tmp_path / "half"))
    assert code == 2 and "MiB" in text and "--family" in text, text
    assert not (tmp_path / "half" / "manifest.json").exists()
    code, text = import_(cli_run, exports["2d"], tmp_path)  # the cap binds import too
    assert code == 3 and "manifest.json" in text, text
    monkeypatch.setattr(exchange, "MAX_MANIFEST_BYTES", size + exchange.MANIFEST_HEAD_BYTES)
    code, text = cli_run("export", str(suites["2d"]), str(tmp_path / "whole"))
    assert code == 0, text
    code, text = import_(cli_run, tmp_path / "whole", tmp_path)
    assert code == 0, text


def test_a_manifest_or_status_past_its_cap_is_refused_unread(
        cli_run: CliRun, exports: dict[str, Path], tmp_path: Path) -> None:
    folder, manifest = folder_copy(exports, "3d", tmp_path)
    status = sparse(folder / valid_case(manifest)["dir"] / "status.txt")
    code, text = import_(cli_run, folder, tmp_path)
    assert code == 3 and str(status) in text and "limit" in text, text
    status.unlink()
    sparse(folder / "manifest.json")
    code, text = import_(cli_run, folder, tmp_path)
    assert code == 3 and "manifest.json" in text and "limit" in text, text
    assert "MemoryError" not in text

"""Fuzzing a small golden file: random bit flips and random attribute edits (seeded, a few
hundred in all; the `slow` variants, run by .ci/run as a step of their own, thousands).
Whatever the damage, `verify` exits 0, 1 or 3 without a traceback, and never reports PASS
for a case whose golden or inputs (or the record fields that say how to read them) were
altered."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.store.codec import set_attrs, text_attr
from aclcheck.store.dispatch import open_golden
from tests.legacy_writer import record_attrs, write_groups

SEED = 20261130
BIT_FLIPS = 200
ATTRIBUTE_EDITS = 120
#: the long variants (`pytest -m slow`): other seeds, 20 times the damage
LONG = 20
#: Record attributes that say how the stored arrays are read (an edit is a data change).
CALL_KEYS = frozenset({"product", "dtype", "format", "self_shape", "grad_shape", "out_shape",
                       "layout", "null", "grad_dtype", "self_dtype", "out_dtype",
                       "grad_format", "self_format", "out_format", "has_golden"})
DATASETS = ("grad_output", "self", "golden")
#: Dataset attributes that say how a stored array is read.
TENSOR_ATTRS = frozenset({"dtype", "shape", "strides", "offset"})


@pytest.fixture(scope="module")
def pristine(fuzz_golden: Path) -> tuple[Path, dict[str, Any]]:
    """The fuzz file as aclcheck writes it (schema 3, packed)."""
    return fuzz_golden, snapshot(fuzz_golden, {})


@pytest.fixture(scope="module")
def pristine_groups(fuzz_golden: Path, tmp_path_factory: pytest.TempPathFactory
                    ) -> tuple[Path, dict[str, Any]]:
    """The same cases in the group-per-case layout (schema 2), which the readers still
    accept: its attributes are what the attribute edits damage."""
    path = tmp_path_factory.mktemp("fuzz-groups") / "groups.h5"
    with open_golden(fuzz_golden) as gf:
        write_groups(path, [(gf.case(cid), gf.data(cid)) for cid in gf.ids()], gf.meta)
    return path, snapshot(path, {})


def snapshot(path: Path, sizes: dict[str, int]) -> dict[str, Any]:
    """What each case's data is, read with bare h5py: its arrays' bytes and views and the
    record fields in CALL_KEYS (None where the bare read fails or an array grew past its
    original size, which it must not be read at)."""
    out: dict[str, Any] = {}
    try:
        with h5py.File(path, "r") as f:
            if "cases" not in f:
                return _packed_snapshot(f, sizes)
            for cid in f["cases"]:
                out[cid] = _case_view(f["cases"][cid], cid, sizes)
    except Exception:  # noqa: BLE001 - a damaged file: compare nothing as equal
        return {}
    return out


def _packed_snapshot(f: h5py.File, sizes: dict[str, int]) -> dict[str, Any]:
    """snapshot() of a packed file: per /index row, the record columns in CALL_KEYS (plus
    `unset`), and per array its slot's bytes and view."""
    out: dict[str, Any] = {}
    rows = f["index"][()]
    names = rows.dtype.names
    for row in rows:
        cid = row["id"].decode("utf-8", errors="replace")
        try:
            view: list[Any] = [sorted((k, _plain(row[k])) for k in names
                                      if k in CALL_KEYS or k == "unset")]
            for name in DATASETS:
                start, count = int(row[f"{name}_start"]), int(row[f"{name}_count"])
                if start < 0:
                    view.append(None)
                    continue
                key = f"{cid}/{name}"
                if key in sizes and count > sizes[key]:
                    out[cid] = None
                    break
                sizes.setdefault(key, count)
                dtype = "float64" if name == "golden" else \
                    row["grad_dtype" if name == "grad_output" else "self_dtype"].decode()
                data = f["data"][dtype][start:start + count]
                extra = [] if name == "golden" else \
                    [_plain(row[f"{name}_strides"]), int(row[f"{name}_offset"])]
                view.append((dtype, count, np.asarray(data).tobytes(), extra))
            else:
                out[cid] = view
        except Exception:  # noqa: BLE001
            out[cid] = None
    return out


def _stored_defaults() -> dict[str, Any]:
    """The attribute a record field with a default holds when it has that default: the
    schema reads an absent attribute as the field's default (record_from_attrs), so
    deleting such an attribute changes nothing about how the case is read."""
    plain = Case(id="x", family="x", product="atlas-a2", dtype="float16", format="NCHW",
                 self_shape=(1, 1, 2, 2), grad_shape=(1, 1, 1, 1), seed=0)
    with h5py.File(io.BytesIO(), "w") as f:  # read back as a file holds them
        set_attrs(f, record_attrs(plain))
        return {fld.name: _plain(f.attrs[fld.name]) for fld in dataclasses.fields(Case)
                if fld.name in CALL_KEYS and fld.name in f.attrs
                and (fld.default is not dataclasses.MISSING
                     or fld.default_factory is not dataclasses.MISSING)}


def _case_view(group: Any, cid: str, sizes: dict[str, int]) -> Any:
    try:
        fields = {k: _plain(v) for k, v in group.attrs.items() if k in CALL_KEYS}
        view: list[Any] = [sorted({**STORED_DEFAULTS, **fields}.items())]
        for name in DATASETS:
            if name not in group:
                view.append(None)
                continue
            ds = group[name]
            key = f"{cid}/{name}"
            if key in sizes and ds.size > sizes[key]:
                return None
            sizes.setdefault(key, ds.size)
            view.append((ds.dtype.str, ds.shape, np.asarray(ds[()]).tobytes(),
                         sorted((k, _plain(v)) for k, v in ds.attrs.items()
                                if k in TENSOR_ATTRS)))
        return view
    except Exception:  # noqa: BLE001
        return None


def _plain(value: Any) -> Any:
    """An attribute by value (0 and 0.0 alike, text decoded), for comparing meaning."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    arr = np.asarray(value)
    if arr.dtype.kind == "S":
        return [_plain(v) for v in arr.reshape(-1).tolist()]
    return arr.tolist()


STORED_DEFAULTS = _stored_defaults()


def sizes_of(path: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    snapshot(path, sizes)
    return sizes


def verify(path: Path, report: Path) -> tuple[int, str, dict[str, str]]:
    """verify in-process (`--no-isolate`): what is under test is reading damaged files,
    which the parent does either way; a worker per call would only add its start-up. A
    crash in the reference would end this test process: stricter than isolation."""
    report.unlink(missing_ok=True)
    result = CliRunner().invoke(cli, ["verify", str(path), "--impl", "reference",
                                      "--no-isolate", "--json", str(report)])
    verdicts = {}
    if report.exists():
        verdicts = {c["id"]: c["verdict"] for c in json.loads(report.read_text())["cases"]}
    return result.exit_code, result.output, verdicts


def check_outcome(label: str, damaged: Path, original: dict[str, Any],
                  sizes: dict[str, int], report: Path) -> int:
    code, output, verdicts = verify(damaged, report)
    assert code in (0, 1, 3), f"{label}: exit {code}\n{output}"
    assert "Traceback" not in output and "internal error" not in output, f"{label}\n{output}"
    if code == 3:
        assert output.count("aclcheck: error:") == 1, f"{label}\n{output}"
    now = snapshot(damaged, dict(sizes))
    for cid, verdict in verdicts.items():
        if verdict == "PASS":
            assert now.get(cid) is not None and now[cid] == original[cid], \
                f"{label}: PASS on altered case {cid}\n{output}"
    return code


@pytest.mark.parametrize(("seed", "flips"), [
    (SEED, BIT_FLIPS), pytest.param(SEED + 2, LONG * BIT_FLIPS, marks=pytest.mark.slow)])
def test_bit_flips(pristine: tuple[Path, dict[str, Any]], tmp_path: Path, seed: int,
                   flips: int) -> None:
    path, original = pristine
    sizes = sizes_of(path)
    clean = path.read_bytes()
    rng = random.Random(seed)
    damaged, report = tmp_path / "flipped.h5", tmp_path / "r.json"
    codes = []
    for i in range(flips):
        data = bytearray(clean)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
        damaged.write_bytes(bytes(data))
        codes.append(check_outcome(f"flip {i}", damaged, original, sizes, report))
    assert codes.count(3) > flips // 10  # the flips did hit something


def _random_value(rng: random.Random) -> Any:
    choices = [
        lambda: text_attr(rng.choice(["", "abc", "-1", "../../x", "float32", "[link=x]y",
                                      "NCHW", "atlas-a3", "1" * 300])),
        lambda: np.int64(rng.choice([-1, 0, 1, 2, 7, 2**40, -(2**62), 10**15])),
        lambda: np.float64(rng.choice([0.0, -1.5, float("nan"), float("inf"), 1e300])),
        lambda: np.asarray([rng.randint(-3, 10**6) for _ in range(rng.randint(0, 6))],
                           dtype=np.int64),
        lambda: np.uint8(rng.randint(0, 255)),
        lambda: np.asarray(b"\xff\xfe", dtype="S2"),
    ]
    return rng.choice(choices)()


def _random_edit(f: h5py.File, rng: random.Random) -> str:
    cids = sorted(f["cases"])
    cid = rng.choice(cids)
    group = f["cases"][cid]
    targets: list[Any] = [f, group, f["index"]] + [group[n] for n in DATASETS if n in group]
    obj = rng.choice(targets)
    names = sorted(obj.attrs) + ["extra"]
    name = rng.choice(names)
    if rng.random() < 0.1 and name in obj.attrs:
        del obj.attrs[name]
        return f"{obj.name}@{name} deleted"
    obj.attrs[name] = _random_value(rng)
    return f"{obj.name}@{name} = {obj.attrs[name]!r}"


@pytest.mark.parametrize(("seed", "edits"), [
    (SEED + 1, ATTRIBUTE_EDITS),
    pytest.param(SEED + 3, LONG * ATTRIBUTE_EDITS, marks=pytest.mark.slow)])
def test_attribute_edits(pristine_groups: tuple[Path, dict[str, Any]], tmp_path: Path,
                         seed: int, edits: int) -> None:
    path, original = pristine_groups
    sizes = sizes_of(path)
    rng = random.Random(seed)
    damaged, report = tmp_path / "edited.h5", tmp_path / "r.json"
    codes = []
    for i in range(edits):
        shutil.copy(path, damaged)
        with h5py.File(damaged, "r+") as f:
            what = " ; ".join(_random_edit(f, rng) for _ in range(rng.randint(1, 2)))
        codes.append(check_outcome(f"edit {i} ({what})", damaged, original, sizes, report))
    assert codes.count(3) > edits // 10 and codes.count(0) > 0

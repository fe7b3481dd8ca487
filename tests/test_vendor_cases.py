"""What a vendor case states beyond shape, dtype and format (docs/case-files.md): views
(strides, offset, storage shape), values (ranges, laws, fills, the values themselves),
provenance and the vendor's expected status; read, made, stored, run and reported."""

from __future__ import annotations

import json
import math
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.errors import SuiteError
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.diagnosis.vendor import agreement_line, vendor_agreement
from aclcheck.ops.materialize import make_tensors
from aclcheck.store.dispatch import open_golden
from aclcheck.suite.casefile import load_case_file, parse_case_entries, toml_file

STRIDED = {
    "id": "strided", "product": "atlas-a2", "dtype": "float32", "format": "NCHW",
    "self_shape": [2, 2, 5, 4], "grad_shape": [2, 2, 5, 4],
    "grad_view_strides": [40, 20, 1, 5], "grad_view_offset": 0,
    "grad_storage_shape": [2, 2, 4, 5], "grad_range": [-50.0, 50.0],
    "source": "ut:t.cpp:12 strided", "vendor_status": 0,
}
FILLED = {
    "id": "filled", "product": "atlas-a2", "dtype": "float16", "format": "NCHW",
    "self_shape": [9, 1, 1, 8], "grad_shape": [9, 1, 1, 2], "grad_fill": "-inf",
    "self_normal": [-100.0, 100.0, 1.0, 25.0], "source": "atk:a.json#3",
}
NULL_SELF = {
    "id": "null-self", "product": "atlas-a2", "dtype": "float32", "format": "ND",
    "grad_shape": [2, 2, 1, 1], "out_shape": [2, 2, 2, 2], "null": ["self"],
    "vendor_status": 161001,
}


def cases_of(*entries: dict) -> list:
    return parse_case_entries(list(entries), "test.toml")


def test_every_stated_key_reads_back_from_the_file_it_writes(tmp_path: Path) -> None:
    cases = cases_of(STRIDED, FILLED, NULL_SELF, {
        **STRIDED, "id": "explicit", "grad_range": None, "grad_view_strides": None,
        "grad_view_offset": None, "grad_storage_shape": None, "contract": "code",
        "grad_values": [float(i) for i in range(80)]})
    path = tmp_path / "c.toml"
    path.write_text(toml_file(cases, "s"))
    assert load_case_file(path).cases == cases
    assert cases[2].self_shape == ()  # a null tensor needs no shape
    assert cases[3].call().contract == "code"


def test_stated_values_are_drawn_as_stated_and_seeded() -> None:
    strided, filled = cases_of(STRIDED, FILLED)
    grad = make_tensors(strided).inputs["grad_output"].view()
    assert grad.min() >= -50 and grad.max() <= 50 and len(np.unique(grad)) > 70
    data = make_tensors(filled)
    assert np.all(data.inputs["grad_output"].view() == -np.inf)
    again = make_tensors(filled).inputs["self"].view()
    assert np.array_equal(data.inputs["self"].view(), again)
    assert abs(float(np.asarray(again, np.float64).mean())) < 130
    ints = cases_of({**STRIDED, "id": "i", "dtype": "int32", "grad_range": None,
                     "grad_values": [2.7, -2.7] * 40, "vendor_status": 161002})[0]
    assert make_tensors(ints).inputs["grad_output"].view().ravel()[:2].tolist() == [2, -2]


def test_a_stated_view_lays_out_the_storage_the_call_names() -> None:
    case = cases_of(STRIDED)[0]
    t = make_tensors(case).inputs["grad_output"]
    assert (t.strides, t.offset, t.storage.size) == ((40, 20, 1, 5), 0, 80)
    assert case.tensor_desc("grad_output").storage == (2, 2, 4, 5)
    # out keeps its contiguous row-major view; self follows the case's layout
    assert make_tensors(case).inputs["self"].contiguous


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"grad_fill": "0"}, "grad_fill", "one value spec per tensor"),
    ({"grad_view_strides": [40, 20, 1, 9]}, "grad_view_strides", "reaches storage element"),
    ({"grad_view_strides": [1, 2, 3]}, "grad_view_strides", "rank-4"),
    ({"grad_range": [5.0, -5.0]}, "grad_range", "lo <= hi"),
    ({"grad_range": None, "grad_values": [1.0, 2.0]}, "grad_values", "80 elements"),
    ({"grad_range": None, "grad_fill": "lots"}, "grad_fill", "not inf, -inf, nan"),
    ({"contract": "maybe"}, "contract", "unknown contract"),
])
def test_what_cannot_be_made_is_refused_naming_the_field(change: dict, field: str,
                                                          words: str) -> None:
    with pytest.raises(SuiteError) as err:
        cases_of({**STRIDED, **change})
    assert f"field '{field}'" in str(err.value) and words in str(err.value)


def test_a_null_tensor_without_a_shape_needs_one_where_out_takes_it() -> None:
    entry = {k: v for k, v in NULL_SELF.items() if k != "grad_shape"}
    with pytest.raises(SuiteError, match="grad_shape"):
        cases_of(entry)


def test_golden_files_carry_the_columns_only_when_a_case_sets_them(tmp_path: Path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text(toml_file(cases_of({k: v for k, v in STRIDED.items()
                                         if not k.startswith("grad_") and k not in (
                                             "source", "vendor_status")} |
                                        {"grad_shape": [2, 2, 5, 4]}), "p"))
    vendor = tmp_path / "vendor.toml"
    vendor.write_text(toml_file(cases_of(STRIDED, FILLED, NULL_SELF), "v"))
    for src in (plain, vendor):
        result = CliRunner().invoke(cli, ["generate", "--cases-file", str(src), "-o",
                                          str(src.with_suffix(".h5"))])
        assert result.exit_code == 0, result.output
    with h5py.File(plain.with_suffix(".h5")) as f:
        assert "grad_view_strides" not in f["index"].dtype.names
    with h5py.File(vendor.with_suffix(".h5")) as f:
        names = f["index"].dtype.names
        assert {"grad_view_strides", "vendor_status", "source", "self_normal"} <= set(names)
    with open_golden(vendor.with_suffix(".h5")) as gf:
        back = [gf.case(c) for c in ("strided", "filled", "null-self")]
        assert back == cases_of(STRIDED, FILLED, NULL_SELF)
        stored = gf.data("strided").inputs["grad_output"]
        assert (stored.strides, stored.storage.size) == ((40, 20, 1, 5), 80)


def test_verify_shows_the_vendor_status_beside_the_others(tmp_path: Path) -> None:
    src = tmp_path / "v.toml"
    src.write_text(toml_file(cases_of(STRIDED, FILLED, NULL_SELF, {
        **NULL_SELF, "id": "vendor-parts", "vendor_status": 161002}), "v"))
    golden, report = tmp_path / "v.h5", tmp_path / "r.json"
    assert CliRunner().invoke(cli, ["generate", "--cases-file", str(src), "-o",
                                    str(golden)]).exit_code == 0
    page = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", "reference",
                                      "--json", str(report), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "vendor statuses: 3 cases; contract agrees 2, parts 1" in result.output
    html = page.read_text()
    assert "The vendor's tests" in html and "vendor-parts" in html
    assert "vendor-parts" in result.output  # the parting is listed
    data = json.loads(report.read_text())
    assert data["vendor"]["contract_parts"] == 1
    assert data["vendor"]["parted"][0]["id"] == "vendor-parts"
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["strided"]["vendor_status"] == 0
    assert by_id["filled"]["source"] == "atk:a.json#3" and "vendor_status" not in by_id["filled"]
    listing = CliRunner().invoke(cli, ["inspect", str(golden), "--json"])
    rows = {c["id"]: c for c in json.loads(listing.output)["cases"]}
    assert rows["vendor-parts"]["vendor_status"] == 161002


def test_a_kernel_that_ignores_a_stated_view_fails(tmp_path: Path) -> None:
    """The stated strides reach the kernel: one that reads gradOutput's storage as if it
    were contiguous is caught."""
    src = tmp_path / "v.toml"
    src.write_text(toml_file(cases_of(STRIDED), "v"))
    golden = tmp_path / "v.h5"
    assert CliRunner().invoke(cli, ["generate", "--cases-file", str(src), "-o",
                                    str(golden)]).exit_code == 0
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl",
                                      "tests.kernels_vendor:storage_as_contiguous"])
    assert result.exit_code == 1 and "FAIL" in result.output


def test_agreement_counts_each_side() -> None:
    def v(vendor: int | None, expected: int, actual: int | None) -> CaseVerdict:
        return CaseVerdict("c", Verdict.PASS, "", expected_status=expected,
                           actual_status=actual, vendor_status=vendor)

    a = vendor_agreement([v(0, 0, 0), v(161002, -1, 0), v(161002, 0, None), v(None, 0, 0)])
    assert (a.stated, a.contract_agrees, a.contract_unspecified, a.contract_parts) == (3, 1, 1, 1)
    assert (a.implementation_agrees, a.implementation_parts, a.implementation_silent) == (1, 1, 1)
    assert agreement_line(a).startswith("vendor statuses: 3 cases; contract agrees 1")
    assert math.isfinite(len(a.parted)) and [p.vendor for p in a.parted] == [161002, 161002]


# -- aclcheck import-cases ---------------------------------------------------------------

SAMPLES = Path(__file__).parent / "data" / "vendor"


def test_import_cases_writes_a_case_file_generate_reads(tmp_path: Path) -> None:
    out = tmp_path / "ut.toml"
    runner = CliRunner()
    result = runner.invoke(cli, ["import-cases", "--from", "ops-nn-ut", "--op",
                                 "aapool3d-bwd", str(SAMPLES / "ut_sample_3d.cpp"),
                                 "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "skipped" in result.output and "asserts nothing" in out.read_text()
    cases = load_case_file(out, op="adaptive_avg_pool3d_backward").cases
    assert cases and all(c.source.startswith("ut:ut_sample_3d.cpp:") for c in cases)
    golden = tmp_path / "ut.h5"
    made = runner.invoke(cli, ["generate", "--op", "aapool3d-bwd", "--cases-file", str(out),
                               "-o", str(golden)])
    assert made.exit_code == 0, made.output
    again = runner.invoke(cli, ["import-cases", "--from", "ops-nn-ut", "--op",
                                "aapool3d-bwd", str(SAMPLES / "ut_sample_3d.cpp"),
                                "-o", str(out)])
    assert again.exit_code == 2 and "--force" in again.output


def test_import_cases_refuses_what_it_cannot_write_or_read(tmp_path: Path) -> None:
    runner = CliRunner()
    atk = str(SAMPLES / "atk_sample_2d.json")
    wrong_suffix = runner.invoke(cli, ["import-cases", "--from", "atk", atk, "-o",
                                       str(tmp_path / "a.json")])
    assert wrong_suffix.exit_code == 2 and "TOML" in wrong_suffix.output
    other_api = runner.invoke(cli, ["import-cases", "--from", "atk", "--op", "aapool3d-bwd",
                                    atk, "-o", str(tmp_path / "a.toml")])
    assert other_api.exit_code == 2 and "atk_sample_2d.json:" in other_api.output
    assert not (tmp_path / "a.toml").exists()
    fmt_for_ut = runner.invoke(cli, ["import-cases", "--from", "ops-nn-ut", "--format", "ND",
                                     str(SAMPLES / "ut_sample_3d.cpp"), "-o",
                                     str(tmp_path / "u.toml")])
    assert fmt_for_ut.exit_code == 2 and "--format" in fmt_for_ut.output


def test_export_carries_stated_storage_and_refused_shapes(tmp_path: Path) -> None:
    """`aclcheck export` hands a harness the storage dims a case states, and a call with a
    negative dim (storage empty) reads back with `aclcheck import`."""
    neg = {**NULL_SELF, "id": "neg", "null": [], "self_shape": [2, 2, -1, 2],
           "out_shape": None, "vendor_status": 161002}
    src, golden, folder = tmp_path / "v.toml", tmp_path / "v.h5", tmp_path / "ex"
    src.write_text(toml_file(cases_of(STRIDED, neg), "v"))
    runner = CliRunner()
    assert runner.invoke(cli, ["generate", "--cases-file", str(src), "-o",
                               str(golden)]).exit_code == 0
    assert runner.invoke(cli, ["export", str(golden), str(folder)]).exit_code == 0
    cases = {c["id"]: c for c in json.loads((folder / "manifest.json").read_text())["cases"]}
    assert cases["strided"]["tensors"]["grad_output"]["storage_shape"] == [2, 2, 4, 5]
    assert cases["neg"]["tensors"]["out"]["storage_size"] == 0
    back = runner.invoke(cli, ["import", str(folder), "-o", str(tmp_path / "r.h5")])
    assert "must be a list" not in back.output

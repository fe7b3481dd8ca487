"""`--impl aclnn` against a stand-in of the CANN libraries (tests/aclnn_standin/*.c built
with the system C compiler): exact statuses, exact marshalling, bugs caught, clean-up."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cases.layouts import layout_geometry
from aclcheck.cli import cli
from aclcheck.impls import ImplementationUnavailable, available, create
from aclcheck.impls.aclnn_abi import find_libraries
from aclcheck.impls.aclnn_impl import AclnnImpl, product_for_soc
from aclcheck.impls.aclnn_options import ENV_LIB_DIR, configure_environment
from aclcheck.impls.base import CallInputs
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.store.dispatch import GoldenFile, open_golden

SOCS = {"Ascend910B1": "atlas-a2", "Ascend910_9391": "atlas-a3",
        "Ascend910A": "atlas-training", "Ascend310P3": "atlas-inference"}
STANDIN_ENV = ("ACLCHECK_STANDIN_LOG", "ACLCHECK_STANDIN_SOC", "ACLCHECK_STANDIN_BUG",
               ENV_LIB_DIR, "ACLCHECK_ACLNN_DEVICE", "ACLCHECK_ACLNN_PRODUCT")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in STANDIN_ENV:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture
def golden(everything_golden: Path) -> Path:
    return everything_golden


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("ACLCHECK_STANDIN_LOG", str(path))
    return path


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def verify(golden: Path, standin: Path, *args: str, env: dict[str, str] | None = None
           ) -> tuple[int, str, dict]:
    report = golden.parent / "report.json"
    result = CliRunner().invoke(
        cli, ["verify", str(golden), "--impl", "aclnn", "--aclnn-lib-dir", str(standin),
              "--json", str(report), *args], env=env, catch_exceptions=False)
    data = json.loads(report.read_text()) if result.exit_code in (0, 1) else {}
    report.unlink(missing_ok=True)
    return result.exit_code, result.output, data


@pytest.fixture
def adapter(standin: Path) -> Iterator[AclnnImpl]:
    impl = AclnnImpl([str(standin)])
    yield impl
    impl.close()


def run_case(impl: AclnnImpl, gf: GoldenFile, case_id: str):
    return impl.run(CallInputs(gf.case(case_id), gf.data(case_id).inputs))


# -- library discovery ---------------------------------------------------------------------


def test_missing_libraries_are_named_with_the_folders_searched(
        tmp_path: Path, golden: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "libascendcl.so").write_bytes(b"")
    monkeypatch.setenv(ENV_LIB_DIR, str(tmp_path))
    with pytest.raises(ImplementationUnavailable) as err:
        create("aclnn")
    msg = str(err.value)
    assert "libnnopbase.so" in msg and "libopapi.so or libopapi_nn.so" in msg
    assert "libascendcl.so;" not in msg and str(tmp_path) in msg
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", "aclnn",
                                      "--aclnn-lib-dir", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "libascendcl.so" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_impls_lists_aclnn_as_unavailable_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_LIB_DIR, str(tmp_path))
    info = next(i for i in available() if i.name == "aclnn")
    assert not info.available and "libascendcl.so" in info.note


def test_default_search_uses_cann_variables_and_prefers_libopapi(tmp_path: Path) -> None:
    home, extra = tmp_path / "cann", tmp_path / "extra"
    (home / "lib64").mkdir(parents=True)
    extra.mkdir()
    (home / "lib64" / "libascendcl.so").write_bytes(b"")
    (extra / "libnnopbase.so").write_bytes(b"")
    (extra / "libopapi_nn.so").write_bytes(b"")
    env = {"ASCEND_HOME_PATH": str(home), "LD_LIBRARY_PATH": str(extra)}
    found = find_libraries(None, env)
    assert found == {"runtime": home / "lib64" / "libascendcl.so",
                     "tensors": extra / "libnnopbase.so",
                     "operator": extra / "libopapi_nn.so"}
    (home / "lib64" / "libopapi.so").write_bytes(b"")
    assert find_libraries(None, env)["operator"] == home / "lib64" / "libopapi.so"
    # explicit folders replace the search
    with pytest.raises(RuntimeError, match="searched .*nowhere"):
        find_libraries([str(tmp_path / "nowhere")], env)


@pytest.mark.parametrize(("soc", "product"), [*SOCS.items(), ("Ascend910ProB", "atlas-training"),
                                              ("Ascend310B4", None), ("", None)])
def test_soc_names_map_to_products(soc: str, product: str | None) -> None:
    assert product_for_soc(soc) == product


# -- conformance with the stand-in -----------------------------------------------------------


@pytest.mark.parametrize("soc", [s if i < 2 else pytest.param(s, marks=pytest.mark.slow)
                                 for i, s in enumerate(SOCS)])  # the rest: -m slow
def test_every_case_of_the_device_product_passes_with_exact_statuses(
        golden: Path, standin: Path, soc: str) -> None:
    code, out, report = verify(golden, standin, env={"ACLCHECK_STANDIN_SOC": soc})
    assert code == 0, out
    product = SOCS[soc]
    verdicts = report["cases"]
    mine = [v for v in verdicts if v["product"] == product]
    assert mine and all(v["verdict"] in ("PASS", "MISTRUSTED") for v in mine)
    assert all(v["verdict"] == "SKIP" and product in v["message"]
               for v in verdicts if v["product"] != product)
    rejected = [v for v in mine if v["expected_status"] not in (0, -1)]
    assert {v["expected_status"] for v in rejected} == {161001, 161002}
    assert all(v["actual_status"] == v["expected_status"] for v in rejected)
    # null grad/self/out, each in every dtype the product supports
    assert sum(v["expected_status"] == 161001 for v in rejected) == 3 * len(
        contract.product(product).dtypes)
    positive = [v for v in mine if v["expected_status"] == 0]
    assert all(v["actual_status"] == 0 for v in positive) and len(positive) > 50


def test_marshalling_of_the_layout_family_is_exact(golden: Path, adapter: AclnnImpl,
                                                   log: Path) -> None:
    gf = open_golden(golden)
    ids = [e.id for e in gf.index if e.family == "layout" and e.product == "atlas-a2"]
    assert {gf.entry(i).layout for i in ids} == {"channels_last", "strided", "transposed"}
    for case_id in ids:
        log.unlink(missing_ok=True)
        case = gf.case(case_id)
        outcome = run_case(adapter, gf, case_id)
        assert outcome.status == 0 and outcome.output is not None
        calls = records(log)
        tensors = [c for c in calls if c["call"] == "aclCreateTensor"]
        assert len(tensors) == 3
        dtype, fmt = contract.ACL_DTYPE_ENUM[case.dtype], contract.ACL_FORMAT_ENUM[case.format]
        for rec, shape, layout in ((tensors[0], case.grad_shape, case.layout),
                                   (tensors[1], case.self_shape, case.layout),
                                   (tensors[2], case.self_shape, "contiguous")):
            strides, offset, size = layout_geometry(tuple(shape), layout)
            assert rec["dims"] == list(shape), case_id
            assert rec["strides"] == list(strides), case_id
            assert rec["offset"] == offset, case_id
            assert rec["storage"] == [size], case_id  # 1-D storage: its length
            assert (rec["dtype"], rec["format"]) == (dtype, fmt), case_id
        if case.layout == "strided":
            assert tensors[0]["offset"] == 3 and tensors[1]["offset"] == 3
        first = next(c for c in calls if c["call"].endswith("GetWorkspaceSize"))
        assert [first["grad_output"], first["self"], first["out"]] == [
            t["tensor"] for t in tensors]
        order = [c["call"] for c in calls]
        assert order == (["aclrtMalloc", "aclrtMemcpy", "aclCreateTensor"] * 3 + [
            "aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize", "aclrtMalloc",
            "aclnnAdaptiveAvgPool2dBackward", "aclrtSynchronizeStream", "aclrtMemcpy"]
            + ["aclDestroyTensor"] * 3 + ["aclrtFree"] * 4), case_id
        kinds = [c["kind"] for c in calls if c["call"] == "aclrtMemcpy"]
        assert kinds == [1, 1, 1, 2]


def test_every_buffer_and_tensor_is_released_on_every_path(golden: Path, standin: Path,
                                                           log: Path) -> None:
    code, out, report = verify(golden, standin, "--product", "atlas-a2")
    assert code == 0, out
    calls = records(log)
    counts = Counter(c["call"] for c in calls)
    mallocs = [c["ptr"] for c in calls if c["call"] == "aclrtMalloc" and c["status"] == 0]
    frees = [c["ptr"] for c in calls if c["call"] == "aclrtFree"]
    assert sorted(mallocs) == sorted(frees) and len(mallocs) > 300
    assert counts["aclCreateTensor"] == counts["aclDestroyTensor"]
    phases = [c for c in calls if c["call"].endswith("GetWorkspaceSize")]
    assert {c["status"] for c in phases} == {0, 161001, 161002}
    assert counts["aclnnAdaptiveAvgPool2dBackward"] == sum(c["status"] == 0 for c in phases)
    assert counts["aclrtSetDevice"] == counts["aclrtResetDevice"] == 1


def test_null_pointers_reach_the_library_as_null(golden: Path, adapter: AclnnImpl,
                                                 log: Path) -> None:
    gf = open_golden(golden)
    for entry in gf.index:
        if entry.product != "atlas-a2" or not entry.null:
            continue
        log.unlink(missing_ok=True)
        outcome = run_case(adapter, gf, entry.id)
        assert outcome.status == 161001 and outcome.output is None
        assert outcome.raised and "[standin]" in outcome.raised  # aclGetRecentErrMsg
        calls = records(log)
        first = next(c for c in calls if c["call"].endswith("GetWorkspaceSize"))
        assert [name for name in ("grad_output", "self", "out") if first[name] == 0] == list(
            entry.null)
        assert sum(c["call"] == "aclCreateTensor" for c in calls) == 2


def test_out_is_prefilled_with_nan_and_empty_calls_run_nothing(golden: Path,
                                                               adapter: AclnnImpl,
                                                               log: Path) -> None:
    gf = open_golden(golden)
    case_id = next(e.id for e in gf.index if e.product == "atlas-a2" and not e.out_written
                   and np.prod(e.out_shape) > 0)
    outcome = run_case(adapter, gf, case_id)
    assert outcome.status == 0
    assert np.all(np.isnan(np.asarray(outcome.output, dtype=np.float64)))
    first = next(c for c in records(log) if c["call"].endswith("GetWorkspaceSize"))
    assert first["workspace"] == 0
    second = next(c for c in records(log) if c["call"] == "aclnnAdaptiveAvgPool2dBackward")
    assert second["computed"] == 0 and second["workspace_size"] == 0


# -- bugs the adapter must expose --------------------------------------------------------------


def test_a_library_that_ignores_strides_fails_the_layout_cases(golden: Path,
                                                               standin: Path) -> None:
    code, out, report = verify(golden, standin, "--family", "layout", "--product", "atlas-a2",
                               env={"ACLCHECK_STANDIN_BUG": "ignore_strides"})
    assert code == 1
    layouts = {v["id"].rsplit("-", 1)[-1] for v in report["cases"] if v["verdict"] == "FAIL"}
    assert layouts == {"cl", "strided", "hwT"}


def test_a_library_accepting_nc_mismatch_is_wrong_status(golden: Path, standin: Path) -> None:
    code, out, report = verify(golden, standin, "--family", "invalid",
                               env={"ACLCHECK_STANDIN_BUG": "accept_nc_mismatch"})
    assert code == 1
    wrong = {v["id"].split("invalid0_")[1].split("-")[0] for v in report["cases"]
             if v["verdict"] == "WRONG_STATUS"}
    assert wrong == {"n_grad", "c_grad", "n_out", "c_out"}
    assert "got success (accepted)" in out


# -- options ----------------------------------------------------------------------------------


def test_deterministic_mode_and_isolated_workers(golden: Path, standin: Path, log: Path
                                                 ) -> None:
    code, out, _ = verify(golden, standin, "--family", "nondivisible", "--product",
                          "atlas-a3", "--deterministic", "--isolate", "--repeat", "2")
    assert code == 0, out
    calls = records(log)
    # one switch, in the worker that built the adapter from its spec: with isolated calls
    # this process never loads the library (the probe worker only reports capabilities)
    switches = [c for c in calls if c["call"] == "aclrtCtxSetSysParamOpt"]
    assert len(switches) == 1 and all(c["opt"] == 0 and c["value"] == 1 for c in switches)
    assert sum(c["call"] == "aclnnAdaptiveAvgPool2dBackward" for c in calls) > 0
    assert ENV_LIB_DIR not in os.environ  # the CLI restored the environment


def test_product_option_overrides_an_unknown_soc(golden: Path, standin: Path) -> None:
    env = {"ACLCHECK_STANDIN_SOC": "Ascend950PR"}
    code, out, report = verify(golden, standin, "--family", "global", env=env)
    assert code == 1 and "no case was judged" in out  # every case SKIP: not a pass
    assert all(v["verdict"] == "SKIP" and "--product" in v["message"]
               for v in report["cases"])
    code, out, report = verify(golden, standin, "--family", "global", "--product",
                               "atlas-a3", env=env)
    assert code == 0 and report["summary"]["passed"] == len(report["cases"]) > 0


def test_device_setup_failure_is_a_clear_message(golden: Path, standin: Path) -> None:
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", "aclnn",
                                      "--aclnn-lib-dir", str(standin), "--aclnn-device", "3"])
    assert result.exit_code == 2
    assert "aclrtSetDevice(3) returned 107001" in result.output


def test_configure_environment_restores_and_rejects_unknown_products() -> None:
    restore = configure_environment(["/a", "/b"], 2, ["atlas-a2"])
    assert os.environ[ENV_LIB_DIR] == os.pathsep.join(["/a", "/b"])
    assert os.environ["ACLCHECK_ACLNN_PRODUCT"] == "atlas-a2"
    restore()
    assert ENV_LIB_DIR not in os.environ and "ACLCHECK_ACLNN_DEVICE" not in os.environ
    configure_environment([], None, ["atlas-a2", "atlas-a3"])()  # several: the SoC decides
    assert "ACLCHECK_ACLNN_PRODUCT" not in os.environ
    with pytest.raises(Exception, match="unknown product"):
        configure_environment([], None, ["atlas-z"])

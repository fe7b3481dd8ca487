"""VerifyConfig: one configuration for the CLI, the runner, the pytest plugin and the
repro line; the repro line of a case reruns it with the same verdict."""

from __future__ import annotations

import ast
import json
import shlex
from dataclasses import fields
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import aclcheck.pytest_plugin
from aclcheck.cli import cli
from aclcheck.cli.verify import _RENAMED, config_from_params, verify
from aclcheck.running.config import ACLNN_ONLY, VerifyConfig
from aclcheck.suite.filters import id_matches


@pytest.fixture
def golden(a2_fp32_fp16_golden: Path) -> Path:
    return a2_fp32_fp16_golden


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


# -- the configuration object and the CLI agree ---------------------------------------------


def test_every_verify_option_is_a_config_field_with_its_flag() -> None:
    by_name = {f.name: f for f in fields(VerifyConfig)}
    options = [p for p in verify.params if isinstance(p, click.Option)]
    assert options
    for param in options:
        name = _RENAMED.get(param.name or "", param.name)
        assert name in by_name, f"verify option {param.opts} has no VerifyConfig field"
        assert by_name[name].metadata["flag"] in param.opts
    flagged = {f.metadata["flag"] for f in fields(VerifyConfig) if f.metadata["flag"]}
    assert flagged == {opt for p in options for opt in p.opts if opt.startswith("--")}


def test_every_field_says_whether_it_changes_verdicts() -> None:
    for f in fields(VerifyConfig):
        assert f.metadata["repro"] in (True, False, ACLNN_ONLY), f.name
        assert f.metadata["doc"], f.name


def test_config_from_cli_equals_config_from_python(golden: Path) -> None:
    ctx = verify.make_context("verify", [str(golden), "--impl", "torch", "--isolate",
                                         "--timeout", "7", "--id", "a*", "--id", "b*",
                                         "--family", "!invalid", "--standard", "cann-mixed"])
    params = dict(ctx.params)
    built = config_from_params(params.pop("golden"), params)
    assert built == VerifyConfig(golden=str(golden), impl="torch", isolate=True, timeout=7.0,
                                 ids=("a*", "b*"), families=("!invalid",),
                                 standards=("cann-mixed",))


def test_single_strings_and_lists_become_tuples() -> None:
    cfg = VerifyConfig(golden="x.h5", standards="cann-mixed", ids=["a*", "b*"])  # type: ignore[arg-type]
    assert cfg.standards == ("cann-mixed",) and cfg.ids == ("a*", "b*")
    assert cfg.standard_names == ("cann-mixed",)


def test_run_options_carry_every_runner_setting() -> None:
    cfg = VerifyConfig(golden="x.h5", isolate=True, timeout=3.0, memory_limit=128, repeat=2,
                       deterministic=True, accumulate="input",
                       standards=("cann-mixed", "aclcheck", "cann-mixed"))
    opts = cfg.run_options()
    assert (opts.isolate, opts.timeout, opts.repeat, opts.deterministic) == (True, 3.0, 2,
                                                                              True)
    assert opts.memory_limit == 128 * 2**20
    assert opts.judge.standards == ("cann-mixed", "aclcheck")
    assert opts.judge.accumulate == "input"
    assert VerifyConfig(golden="x.h5").run_options().judge.standards == ("aclcheck",)


# -- the repro line -----------------------------------------------------------------------------


def test_repro_has_every_verdict_changing_option_and_nothing_else() -> None:
    cfg = VerifyConfig(golden="s.h5", impl="mod:fn", standards=("cann-mixed", "aclcheck"),
                       tolerances="t.toml", accumulate="input", isolate=True, timeout=7.5,
                       memory_limit=512, repeat=3, deterministic=True, xfail="known.toml",
                       strict_xfail=True, dtypes=("float32",), families=("!invalid",),
                       ids=("a*",), jobs=2, json_path="r.json", verbose=True, width=200)
    words = shlex.split(cfg.repro("a2-fp32-x"))
    assert words == ["aclcheck", "verify", "s.h5", "--impl", "mod:fn",
                     "--standard", "cann-mixed", "--standard", "aclcheck",
                     "--tolerances", "t.toml", "--accumulate", "input",
                     "--xfail", "known.toml", "--strict-xfail",
                     "--isolate", "--timeout", "7.5", "--memory-limit", "512",
                     "--repeat", "3", "--deterministic", "--id", "a2-fp32-x"]


def test_repro_defaults_are_left_out_and_results_replace_impl() -> None:
    assert VerifyConfig(golden="s.h5").repro("c") == "aclcheck verify s.h5 --impl reference --id c"
    cfg = VerifyConfig(golden="s.h5", results="board.h5", timeout=10.0)
    assert cfg.repro("c") == "aclcheck verify s.h5 --results board.h5 --timeout 10 --id c"


def test_repro_names_the_product_only_for_aclnn() -> None:
    words = VerifyConfig(golden="s.h5", impl="aclnn", products=("atlas-a3",),
                         aclnn_lib_dirs=("/opt/lib",), aclnn_device=1).repro("c")
    assert "--product atlas-a3" in words and "--aclnn-lib-dir /opt/lib" in words
    assert "--aclnn-device 1" in words
    assert "--product" not in VerifyConfig(golden="s.h5", impl="torch",
                                           products=("atlas-a3",)).repro("c")


@pytest.mark.parametrize("case_id", ["a2-fp32-x", "a[1]*?-b", "we'ird id$(x)"])
def test_repro_id_selects_exactly_that_case(case_id: str) -> None:
    words = shlex.split(VerifyConfig(golden="s.h5").repro(case_id))
    pattern = words[words.index("--id") + 1]
    assert id_matches(case_id, (pattern,))
    assert not id_matches(case_id + "x", (pattern,)) and not id_matches("a2", (pattern,))


def _verdicts(report: Path) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads(report.read_text())["cases"]}


def test_repro_round_trip_gives_the_same_verdict(golden: Path, tmp_path: Path) -> None:
    """Run, take each failing case's printed repro, run it: same verdict, same repro."""
    known = tmp_path / "known.toml"
    known.write_text('[[xfail]]\nid = "*-fp16-*nondiv*"\nreason = "known"\n')
    first = tmp_path / "first.json"
    code, out = invoke("verify", str(golden), "--impl", "kernels:off_by_one_end",
                       "--isolate", "--timeout", "20", "--repeat", "2",
                       "--standard", "aclcheck", "--standard", "cann-mixed",
                       "--xfail", str(known), "--family", "!invalid",
                       "--json", str(first))
    assert code == 1, out
    cases = _verdicts(first)
    # the console details one case per signature group (the worst): those repros
    picked = [c for c in cases.values() if c["verdict"] == "FAIL" and c["repro"] in out][:2]
    assert picked
    picked += [c for c in cases.values() if c["verdict"] == "XFAIL"][:1]
    for case in picked:
        assert case["repro"] in out or case["verdict"] == "XFAIL"
        words = shlex.split(case["repro"])
        assert words[:2] == ["aclcheck", "verify"]
        assert {"--isolate", "--timeout", "--repeat", "--xfail"} <= set(words)
        again = tmp_path / "again.json"
        code, out2 = invoke(*words[1:], "--json", str(again))
        rerun = _verdicts(again)
        assert list(rerun) == [case["id"]], out2
        assert rerun[case["id"]]["verdict"] == case["verdict"]
        assert rerun[case["id"]]["repro"] == case["repro"]
        assert rerun[case["id"]]["message"] == case["message"]


def test_pytest_plugin_does_not_import_the_cli_layer() -> None:
    tree = ast.parse(Path(aclcheck.pytest_plugin.__file__).read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert "aclcheck.running.config" in imported
    assert not [m for m in imported if m and m.startswith("aclcheck.cli")]

"""Special values under the two overflow modes (docs/contract.md section 10)."""

from __future__ import annotations

import numpy as np
import pytest

from aclcheck.dtypes import FLOAT16, FLOAT32
from aclcheck.judging.case.overflow import OverflowMode, classify_specials

INF, NAN = np.inf, np.nan
MAX16 = FLOAT16.max_value


def _one(g, a, *, m=None, extra=1.0, mode=OverflowMode.INF_NAN, acc=FLOAT32, unjudged=None,
         fmt=FLOAT16):
    """Classify one element: 'numeric', 'ok' or 'bad' (and the Specials record)."""
    arr = lambda x: np.array([x], dtype=np.float64)  # noqa: E731
    s = classify_specials(arr(g), arr(a), arr(extra), arr(abs(g) if m is None else m), fmt,
                          acc.overflow_threshold, mode,
                          None if unjudged is None else np.array([unjudged]))
    kind = "numeric" if s.numeric[0] else "ok" if s.ok[0] else "bad"
    assert s.numeric[0] + s.ok[0] + s.bad[0] == 1
    return kind, s


class TestInfNan:
    def test_overflow_must_be_inf(self):
        assert _one(70000.0, INF)[0] == "ok"
        assert _one(70000.0, MAX16)[0] == "bad"
        assert _one(-70000.0, -INF)[0] == "ok"

    def test_near_the_threshold_inf_or_the_number(self):
        thr = FLOAT16.overflow_threshold
        kind, s = _one(thr - 0.5, INF, extra=1.0)
        assert kind == "ok" and s.near_threshold == 1
        assert _one(thr - 0.5, MAX16, extra=1.0)[0] == "numeric"

    def test_nan_and_inf_must_match_and_an_accumulator_may_overflow(self):
        assert _one(NAN, NAN)[0] == "ok"
        assert _one(NAN, 1.0)[0] == "bad"
        assert _one(INF, INF)[0] == "ok" and _one(INF, -INF)[0] == "bad"
        kind, s = _one(3.0, NAN, m=1e39, fmt=FLOAT32)
        assert kind == "ok" and s.acc_overflow == 1
        assert _one(3.0, NAN)[0] == "bad"
        assert _one(3.0, 3.0)[0] == "numeric"


class TestSaturation:
    S = OverflowMode.SATURATION

    def test_overflow_must_be_the_largest_finite_value(self):
        kind, s = _one(70000.0, MAX16, mode=self.S)
        assert kind == "ok" and s.saturated == 1
        assert _one(-70000.0, -MAX16, mode=self.S)[0] == "ok"
        assert _one(70000.0, INF, mode=self.S)[0] == "bad"
        assert _one(70000.0, 60000.0, mode=self.S)[0] == "bad"
        assert _one(70000.0, -MAX16, mode=self.S)[0] == "bad"

    def test_finite_inputs_never_give_inf_or_nan(self):
        assert _one(3.0, INF, mode=self.S)[0] == "bad"
        assert _one(3.0, NAN, mode=self.S)[0] == "bad"
        assert _one(3.0, 3.0, mode=self.S)[0] == "numeric"

    def test_a_saturating_accumulator_leaves_any_finite_value(self):
        kind, s = _one(3.0, 123.0, m=1e5, mode=self.S, acc=FLOAT16)
        assert kind == "ok" and s.acc_overflow == 1
        assert _one(3.0, INF, m=1e5, mode=self.S, acc=FLOAT16)[0] == "bad"
        assert _one(3.0, 123.0, m=1e4, mode=self.S, acc=FLOAT16)[0] == "numeric"

    def test_planes_with_inf_or_nan_inputs_are_not_judged(self):
        kind, s = _one(3.0, INF, mode=self.S, unjudged=True)
        assert kind == "ok" and s.unjudged == 1
        assert _one(NAN, 5.0, mode=self.S)[0] == "ok"  # a non-finite golden: inputs were
        assert _one(3.0, 5.0, mode=self.S, unjudged=False)[0] == "numeric"


# -- each product's mode, as verify judges it ------------------------------------------------


def saturating_reference(grad_output, self):
    """The float64 reference rounded once, converted as a saturation-mode device does
    (inf -> the largest finite value, NaN -> 0): `--impl` of the CLI test below."""
    from tests.kernels import reference_rounded
    from tests.test_discrimination import saturated

    return saturated(reference_rounded(grad_output, self))


class TestProductModes:
    def test_each_product_judged_in_its_default_mode(self):
        from aclcheck.judging.case.overflow import judged_mode, product_modes

        assert product_modes("atlas-a2")[0] == OverflowMode.INF_NAN
        assert product_modes("atlas-training") == (OverflowMode.SATURATION,)
        assert judged_mode("atlas-a3", None) == (OverflowMode.INF_NAN, None)
        assert judged_mode("atlas-a3", "saturation") == (OverflowMode.SATURATION, None)
        mode, note = judged_mode("atlas-inference", "inf-nan")
        assert mode == OverflowMode.SATURATION and "does not apply" in note

    def _overflowing(self, product):
        """Two FLOAT16 terms of 40 000 on one element (upsampling H 1 <- Ho 2): 80 000."""
        from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context

        g = np.full((1, 1, 2, 1), 40000.0, np.float16)
        golden = np.full((1, 1, 1, 1), 80000.0)
        return golden, Context(product, "float16", g, (1, 1))

    def test_a2_expects_inf_training_the_largest_finite_value(self):
        from aclcheck.ops.adaptive_avg_pool2d_backward.compare import compare

        inf = np.full((1, 1, 1, 1), INF, np.float16)
        top = np.full((1, 1, 1, 1), MAX16, np.float16)
        golden, a2 = self._overflowing("atlas-a2")
        assert compare(golden, inf, a2).passed and not compare(golden, top, a2).passed
        golden, training = self._overflowing("atlas-training")
        res = compare(golden, top, training)
        assert res.passed and any("saturation mode" in n for n in res.notes)
        assert not compare(golden, inf, training).passed

    def test_saturation_leaves_planes_with_inf_inputs_unjudged(self):
        from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context, compare

        g = np.array([1.0, INF, 2.0, 4.0], np.float16).reshape(2, 1, 2, 1)
        golden = np.array([INF, 3.0]).reshape(2, 1, 1, 1)
        spread = np.array([NAN, 3.0], np.float16).reshape(2, 1, 1, 1)  # matmul: 0 x inf
        for product, passes in (("atlas-training", True), ("atlas-a2", False)):
            res = compare(golden, spread, Context(product, "float16", g, (1, 1)))
            assert res.passed is passes, product
        wrong = np.array([NAN, 5.0], np.float16).reshape(2, 1, 1, 1)  # the finite plane
        assert not compare(golden, wrong, Context("atlas-training", "float16", g,
                                                  (1, 1))).passed


def test_overflow_mode_selects_saturation_on_a2(tmp_path, write_golden):
    import json

    from click.testing import CliRunner

    from aclcheck.cli import cli
    from aclcheck.suite.selection import Selection

    golden = write_golden(tmp_path, Selection(
        products=("atlas-a2", "atlas-training"), dtypes=("float16",), formats=("NCHW",),
        families=("special", "rounding"), count=5, seed=2), "modes")
    impl = "tests.test_overflow_modes:saturating_reference"

    def run(*extra):
        report = tmp_path / f"r{len(extra)}.json"
        res = CliRunner().invoke(cli, ["verify", str(golden), "--impl", impl,
                                       "--no-stale-check", "--json", str(report), *extra])
        assert res.exit_code in (0, 1), res.output
        return {c["id"]: c for c in json.loads(report.read_text())["cases"]}

    default = run()
    failing = {i for i, c in default.items() if c["verdict"] == "FAIL"}
    assert failing and all(default[i]["product"] == "atlas-a2" for i in failing)
    selected = run("--overflow-mode", "saturation")
    assert all(c["verdict"] != "FAIL" for c in selected.values())
    assert "--overflow-mode saturation" in next(iter(selected.values()))["repro"]
    refused = run("--overflow-mode", "inf-nan")
    notes = [n for c in refused.values() if c["product"] == "atlas-training"
             for n in c["notes"]]
    assert any("does not apply" in n for n in notes)


def _modes_golden(tmp_path, write_golden):
    from aclcheck.suite.selection import Selection

    return write_golden(tmp_path, Selection(
        products=("atlas-a2", "atlas-training"), dtypes=("float16",), formats=("NCHW",),
        families=("special", "rounding"), count=5, seed=2), "modes")


@pytest.mark.parametrize("impl", ["reference", "tests/kernels_documented.py:documented"])
def test_the_reference_and_a_told_kernel_follow_the_selected_mode(tmp_path, write_golden,
                                                                   impl):
    """The mode reaches the adapter on the call: the reference (and a callable told
    `overflow_mode=`) saturates exactly where the call is judged in saturation mode, so
    both pass in either mode (the reference failed A2's overflow cases under
    `--overflow-mode saturation` while it looked at the product's default)."""
    import json

    from click.testing import CliRunner

    from aclcheck.cli import cli

    golden = _modes_golden(tmp_path, write_golden)
    for extra in ((), ("--overflow-mode", "saturation")):
        report = tmp_path / "r.json"
        res = CliRunner().invoke(cli, ["verify", str(golden), "--impl", impl,
                                       "--no-stale-check", "--json", str(report), *extra])
        cases = json.loads(report.read_text())["cases"]
        bad = [c["id"] for c in cases if c["verdict"] in ("FAIL", "ERROR")]
        assert bad == [], (extra, bad, res.output[-2000:])
        assert any(c["product"] == "atlas-a2" and "near-max" in c["id"] for c in cases)


def test_a_callable_is_told_its_calls_product_and_mode() -> None:
    """`product=` / `overflow_mode=` in a callable's signature get the call's; a callable
    without them is called as before."""
    from types import SimpleNamespace

    from aclcheck.impls.base import CallInputs
    from aclcheck.impls.callable_impl import CallableImpl

    told: list[tuple[str, str]] = []

    def kernel(grad_output, self, *, product, overflow_mode):
        told.append((product, overflow_mode))
        return self

    def plain(grad_output, self):
        return self

    tensor = SimpleNamespace(view=lambda: np.zeros((1, 2, 2), dtype=np.float32))
    for product, mode, want in (("atlas-a2", None, "inf-nan"),
                                ("atlas-a2", "saturation", "saturation"),
                                ("atlas-training", None, "saturation")):
        case = SimpleNamespace(product=product)
        call = CallInputs(case, {"grad_output": tensor, "self": tensor}, mode)  # type: ignore[arg-type]
        assert CallableImpl("m:kernel", kernel).run(call).raised is None
        assert told[-1] == (product, want)
        assert CallableImpl("m:plain", plain).run(call).raised is None
    assert "told product=, overflow_mode=" in CallableImpl("m:kernel", kernel).description

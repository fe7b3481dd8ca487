"""Failure signatures and their rules (aclcheck/judging/diagnosis/signature.py), the ranking
of the diagnosis (aclcheck/judging/diagnosis/ranking.py) and the per-case findings
(judging/diagnosis/clues.py, ops/adaptive/clues.py), all over plain records and small
arrays."""

from __future__ import annotations

import numpy as np
import pytest

from aclcheck.judging.diagnosis.clues import Clue, generic_clues
from aclcheck.judging.diagnosis.codes import CodeKind
from aclcheck.judging.diagnosis.codes import DiagnosisCode as C
from aclcheck.judging.diagnosis.ranking import rank_evidence
from aclcheck.judging.diagnosis.reproduce import CaseClues, ModelResult
from aclcheck.judging.diagnosis.signature import (
    AxisKind,
    CaseFacts,
    HeldRule,
    axis_kind,
    differing,
    failure_signature,
    rules,
)
from aclcheck.ops.adaptive.clues import window_findings

K = AxisKind


def test_axis_kinds() -> None:
    assert axis_kind(8, 4) is K.DIVISIBLE
    assert axis_kind(7, 3) is K.NONDIVISIBLE
    assert axis_kind(3, 5) is K.UPSAMPLING
    assert axis_kind(6, 6) is K.IDENTITY
    assert axis_kind(9, 1) is K.GLOBAL
    assert axis_kind(1, 1) is K.IDENTITY
    assert axis_kind(0, 3) is K.EMPTY


def _case(i: int, verdict: str, *, family: str = "divisible", layout: str = "contiguous",
          rank: int = 4, dtype: str = "float16", product: str = "atlas-a2",
          h: AxisKind = K.DIVISIBLE, w: AxisKind = K.DIVISIBLE, square: bool = True,
          acc: str = "float32", valid: bool = True) -> CaseFacts:
    return CaseFacts(f"c{i}", verdict, family, layout, rank, product, dtype, valid,
                     (("h", h), ("w", w)), square, acc)


def _suite(fail) -> list[CaseFacts]:  # noqa: ANN001
    """A varied little suite whose verdicts follow the predicate `fail(case)`."""
    cases = []
    i = 0
    for family, h, w, square in (("divisible", K.DIVISIBLE, K.DIVISIBLE, True),
                                 ("nondivisible", K.NONDIVISIBLE, K.DIVISIBLE, False),
                                 ("upsampling", K.UPSAMPLING, K.UPSAMPLING, False),
                                 ("global", K.GLOBAL, K.GLOBAL, True),
                                 ("identity", K.IDENTITY, K.IDENTITY, True)):
        for layout in ("contiguous", "channels_last", "strided"):
            for rank_ in (3, 4):
                for dtype, product, acc in (("float16", "atlas-a2", "float32"),
                                            ("float32", "atlas-a2", "float32"),
                                            ("float16", "atlas-training", "float16")):
                    c = _case(i, "PASS", family=family, layout=layout, rank=rank_,
                              dtype=dtype, product=product, h=h, w=w, square=square,
                              acc=acc)
                    cases.append(CaseFacts(**{**c.__dict__,
                                              "verdict": "FAIL" if fail(c) else "PASS"}))
                    i += 1
    cases.append(_case(i, "WRONG_STATUS", family="invalid", valid=False))
    return cases


def _codes(facts: list[CaseFacts]) -> set[C]:
    return {r.code for r in rules(facts)}


@pytest.mark.parametrize(("fail", "code"), [
    (lambda c: c.layout != "contiguous", C.LAYOUT_STRIDE),
    (lambda c: c.rank == 3, C.RANK_PATH),
    (lambda c: not c.square, C.AXIS_MIXUP),
    (lambda c: c.family == "upsampling", C.UPSAMPLING_WINDOWS),
    (lambda c: c.family in ("nondivisible", "upsampling"), C.WINDOW_BOUNDS_OR_DIVISOR),
    (lambda c: c.dtype == "float16" and c.accumulation == "float32",
     C.ACCUMULATION_PRECISION),
])
def test_each_rule_reads_its_pattern(fail, code) -> None:  # noqa: ANN001
    facts = _suite(fail)
    assert code in _codes(facts)
    found = next(r for r in rules(facts) if r.code is code)
    assert found.failing == sum(f.failing and f.valid for f in facts)


def test_rules_stay_quiet_without_a_pattern() -> None:
    assert rules(_suite(lambda c: False)) == ()
    every = rules(_suite(lambda c: True))
    assert [r.code for r in every] == [C.EVERY_CASE]
    # failures scattered over every group: no rule claims a pattern
    scattered = _suite(lambda c: int(c.case_id[1:]) % 7 == 0)
    assert _codes(scattered) <= {C.FAMILY_ONLY}
    assert C.LAYOUT_STRIDE not in _codes(scattered)


def test_signature_tables_and_differing_groups() -> None:
    facts = _suite(lambda c: c.rank == 3)
    sig = failure_signature(facts)
    assert sig.by_rank["3"]["failed"] == 45 and sig.by_rank["4"]["passed"] == 45
    assert sig.by_family["invalid"] == {"cases": 1, "wrong_status": 1}
    assert sig.by_rank["4"]["cases"] == 45  # valid calls only
    assert set(sig.by_axis_kind) == {"h", "w", "square"}
    assert sig.by_axis_kind["h"]["upsampling"]["cases"] == 18
    assert "atlas-a2 x float16" in sig.by_product_dtype
    rows = differing(sig)
    assert {r.table for r in rows} == {"rank"}
    js = sig.to_json()
    assert set(js) == {"by_family", "by_layout", "by_rank", "by_product_dtype",
                       "by_axis_kind"}


def _model(code: C, explained: bool, exact: bool = False, precision: bool = False
           ) -> ModelResult:
    return ModelResult(code, code.value, explained, exact, precision,
                       "input" if precision else None)


def test_rank_orders_by_evidence() -> None:
    cases = [CaseClues(f"c{i}", (
        _model(C.CAST_TOWARD_ZERO, i < 6, exact=i < 4),
        _model(C.ACCUMULATE_INPUT_DTYPE, True, precision=True),
        _model(C.SCALE_INPUT_DTYPE, i == 0),
    )) for i in range(8)]
    entries = rank_evidence(cases, [HeldRule(C.ACCUMULATION_PRECISION, "fp16 only", 8)])
    codes = [e.code for e in entries]
    # the cast explains 6 of 8 (most): a model leads the rule; the precision model
    # explains all 8 but scores only the 2 no value model explains: it comes last
    assert codes == [C.CAST_TOWARD_ZERO, C.ACCUMULATION_PRECISION, C.ACCUMULATE_INPUT_DTYPE]
    assert C.SCALE_INPUT_DTYPE not in codes  # 1 of 8: below MIN_SHARE
    cast = entries[codes.index(C.CAST_TOWARD_ZERO)]
    assert (cast.cases_explained, cast.cases_failing, cast.exact) == (6, 8, 4)
    assert cast.message() == ("cast-toward-zero: reproduces 6 of 8 failing cases within the "
                              "accumulation error bound, 4 bit-exactly")
    assert cast.to_json()["kind"] == "model"


def test_rank_model_before_rule_at_equal_share_and_exact_first() -> None:
    cases = [CaseClues(f"c{i}", (_model(C.WINDOW_END_FLOOR, True, exact=True),
                                    _model(C.WINDOW_BOUNDS_FLOAT32, True)))
             for i in range(4)]
    entries = rank_evidence(cases, [HeldRule(C.WINDOW_BOUNDS_OR_DIVISOR, "pattern", 4)])
    assert [e.code for e in entries] == [C.WINDOW_END_FLOOR, C.WINDOW_BOUNDS_FLOAT32,
                                         C.WINDOW_BOUNDS_OR_DIVISOR]
    assert entries[0].message().endswith("reproduces 4 of 4 failing cases bit-exactly")
    assert entries[2].kind is CodeKind.RULE and entries[2].message() == "pattern"


def test_models_explaining_the_same_are_one_entry() -> None:
    cases = [CaseClues(f"c{i}", (_model(C.WINDOW_BOUNDS_FLOAT32, True, exact=True),
                                    _model(C.WINDOW_BOUNDS_FLOAT32_RECIPROCAL, True,
                                           exact=True)))
             for i in range(3)]
    entries = rank_evidence(cases)
    assert [e.code for e in entries] == [C.WINDOW_BOUNDS_FLOAT32]
    assert entries[0].alternatives == (C.WINDOW_BOUNDS_FLOAT32_RECIPROCAL,)
    assert entries[0].message().endswith("(so does window-bounds-float32-reciprocal)")


def test_a_finding_on_every_case_leads_a_rule() -> None:
    cases = [CaseClues(f"c{i}", (), (Clue(C.BATCH_STRIDE, 1.0, "batch 0 right"),))
             for i in range(4)]
    entries = rank_evidence(cases, [HeldRule(C.RANK_PATH, "only rank 4", 4)])
    assert [e.code for e in entries] == [C.BATCH_STRIDE, C.RANK_PATH]


def test_rule_needs_more_than_a_coincidence() -> None:
    """11 square cases passing while a fifth of the others fail is no pattern."""
    facts = [_case(i, "PASS", square=True) for i in range(11)]
    facts += [_case(100 + i, "FAIL" if i % 5 == 0 else "PASS", square=False)
              for i in range(300)]
    assert C.AXIS_MIXUP not in _codes(facts)
    facts = [_case(i, "PASS", square=True) for i in range(11)]
    facts += [_case(100 + i, "FAIL" if i % 3 else "PASS", square=False) for i in range(300)]
    assert C.AXIS_MIXUP in _codes(facts)


def test_precision_model_leads_when_nothing_else_explains() -> None:
    cases = [CaseClues(f"c{i}", (_model(C.ACCUMULATE_INPUT_DTYPE, True, precision=True),
                                    _model(C.CAST_TOWARD_ZERO, i == 0)))
             for i in range(5)]
    entries = rank_evidence(cases)
    assert entries[0].code is C.ACCUMULATE_INPUT_DTYPE
    assert "within the error bound of input accumulation" in entries[0].message()


def test_rank_is_empty_when_nothing_fails_or_nothing_explains() -> None:
    assert rank_evidence([]) == ()
    assert rank_evidence([CaseClues("c0", (_model(C.CAST_TOWARD_ZERO, False),))]) == ()


def test_finding_entries_and_case_order() -> None:
    f_plane = Clue(C.PLANE_STRIDE, 1.0, "plane 0 right")
    f_edge = Clue(C.WINDOW_EDGES, 0.4, "edges")
    cases = [CaseClues(f"c{i}", (), (f_edge, f_plane)) for i in range(3)]
    entries = rank_evidence(cases)
    assert [e.code for e in entries] == [C.PLANE_STRIDE]
    assert entries[0].message() == "plane 0 right (in 3 of 3 failing cases)"
    assert CaseClues("c", findings=(f_edge, f_plane)).ordered_findings == (f_plane, f_edge)


# -- per-case findings -------------------------------------------------------------------


def test_plane_and_batch_findings() -> None:
    wrong = np.zeros((2, 3, 4, 5), dtype=bool)
    wrong[0, 1:] = True
    wrong[1] = True
    codes = {f.code for f in generic_clues(wrong, np.ones(wrong.shape), np.zeros(wrong.shape), 2)}
    assert C.PLANE_STRIDE in codes and C.UNWRITTEN in codes
    wrong[:] = False
    wrong[1] = True
    got = generic_clues(wrong, np.ones(wrong.shape), np.full(wrong.shape, 2.0), 2)
    assert [f.code for f in got] == [C.BATCH_STRIDE]
    wrong[:] = False
    wrong[:, 2] = True
    assert [f.code for f in generic_clues(wrong, np.ones(wrong.shape), np.ones(wrong.shape), 2)
            ] == [C.LAST_PLANE]


def test_edge_findings() -> None:
    wrong = np.zeros((3, 6, 5), dtype=bool)
    wrong[:, -1, :] = True
    assert [f.code for f in generic_clues(wrong, np.ones(wrong.shape), np.ones(wrong.shape), 1)
            ] == [C.LAST_ROW]
    wrong[:, :, -1] = True
    got = generic_clues(wrong, np.ones(wrong.shape), np.ones(wrong.shape), 1)
    assert [f.code for f in got] == [C.LAST_ROW_AND_COLUMN]


def test_divisor_ratio_finding() -> None:
    """A divisor bug on divisible windows: actual/golden is one number per window."""
    rng = np.random.default_rng(0)
    golden = rng.standard_normal((2, 8, 6))
    actual = golden.copy()
    actual[:, :4, :3] *= 0.5
    actual[:, 4:, 3:] *= 2 / 3
    wrong = actual != golden
    got = window_findings(wrong, golden, actual, [(2, 8), (2, 6)], precision=11)
    ratio = [f for f in got if f.code is C.DIVISOR_RATIO]
    assert ratio and ratio[0].share == 1.0
    noise = golden * (1 + rng.standard_normal(golden.shape) * 1e-2)
    got = window_findings(noise != golden, golden, noise, [(2, 8), (2, 6)], precision=11)
    assert C.DIVISOR_RATIO not in {f.code for f in got}


def test_overlap_and_window_edge_findings() -> None:
    # H = 9 <- Ho = 4: windows [0,3) [2,5) [4,7) [6,9) overlap at rows 2, 4, 6
    golden = np.ones((1, 9, 4))
    wrong = np.zeros(golden.shape, dtype=bool)
    wrong[:, [2, 4, 6], :] = True
    codes = {f.code for f in window_findings(wrong, golden, golden + wrong, [(4, 9), (4, 4)],
                                             precision=11)}
    assert C.OVERLAP_ONLY in codes
    # divisible H = 12 <- 3 (windows of 4): first/last rows of each window
    golden = np.ones((1, 12, 4))
    wrong = np.zeros(golden.shape, dtype=bool)
    wrong[:, [0, 3, 4, 7, 8, 11], :] = True
    codes = {f.code for f in window_findings(wrong, golden, golden + 1e-3 * wrong,
                                             [(3, 12), (4, 4)], precision=11)}
    assert C.WINDOW_EDGES in codes


def test_every_diagnosis_code_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "diagnosis.md").read_text()
    missing = [c.value for c in C if f"`{c.value}`" not in doc]
    assert not missing, f"codes not in docs/diagnosis.md: {missing}"


def test_shape_family_relabels_shrunk_cases() -> None:
    from aclcheck.ops.adaptive.facts import relabel, shape_family

    assert shape_family([K.NONDIVISIBLE, K.DIVISIBLE]) == "nondivisible"
    assert shape_family([K.UPSAMPLING, K.NONDIVISIBLE]) == "upsampling"
    assert shape_family([K.IDENTITY, K.IDENTITY]) == "identity"
    assert shape_family([K.GLOBAL, K.GLOBAL]) == "global"
    assert shape_family([K.GLOBAL, K.DIVISIBLE]) == "divisible"
    assert relabel("nondivisible", [K.UPSAMPLING, K.IDENTITY]) == "upsampling"
    assert relabel("special", [K.UPSAMPLING, K.IDENTITY]) == "special"

"""Diagnosis codes: the stable names of every cause aclcheck can name.

Kebab-case values, written into JSON reports (`diagnosis[].code`, a case's `findings`)
and read by tools that group failures (a hunt campaign deduplicates by them), so a value
never changes meaning and is never reused; docs/diagnosis.md explains each one (a test
checks that every code is there). Three kinds:

- model: a what-if model (the operator's bugs.py) reproduced the kernel's output;
- rule: the run's failure signature (which groups of cases fail) reads that way;
- finding: where the wrong elements of one case sit says so.
"""

from __future__ import annotations

from enum import StrEnum


class CodeKind(StrEnum):
    MODEL = "model"
    RULE = "rule"
    FINDING = "finding"
    MEASURED = "measured"  # the kernel's own M, measured by the probe (judging.diagnosis.probe)


class DiagnosisCode(StrEnum):
    # -- models: window bounds
    WINDOW_END_FLOOR = "window-end-floor"
    WINDOW_START_CEIL = "window-start-ceil"
    WINDOW_BOUNDS_FLOAT32 = "window-bounds-float32"
    WINDOW_BOUNDS_FLOAT32_RECIPROCAL = "window-bounds-float32-reciprocal"
    # -- models: divisor
    DIVISOR_WHOLE_INPUT = "divisor-whole-input"
    DIVISOR_KH_KH = "divisor-kh-kh"
    DIVISOR_KW_KW = "divisor-kw-kw"
    DIVISOR_KW_FROM_HO = "divisor-kw-from-ho"
    DIVISOR_KH_FROM_WO = "divisor-kh-from-wo"
    # -- models: axes, planes, layout
    AXES_SWAPPED = "axes-swapped"
    PLANE_0_BROADCAST = "plane-0-broadcast"
    ONLY_PLANE_0 = "only-plane-0"
    STRIDES_IGNORED = "strides-ignored"
    # -- models: arithmetic
    ACCUMULATE_INPUT_DTYPE = "accumulate-input-dtype"
    SCALE_INPUT_DTYPE = "scale-input-dtype"
    CAST_TOWARD_ZERO = "cast-toward-zero"
    CAST_TIES_AWAY = "cast-ties-away"
    CAST_ROUND_UP = "cast-round-up"
    FLUSH_TO_ZERO = "flush-to-zero"
    # -- models: scatters (max pooling)
    SHARED_STORE = "shared-store"
    SHARED_FIRST = "shared-first"
    INDEX_WINDOW_RELATIVE = "index-window-relative"
    # -- rules over the failure signature
    LAYOUT_STRIDE = "layout-stride"
    RANK_PATH = "rank-path"
    AXIS_MIXUP = "axis-mixup"
    WINDOW_BOUNDS_OR_DIVISOR = "window-bounds-or-divisor"
    UPSAMPLING_WINDOWS = "upsampling-windows"
    ACCUMULATION_PRECISION = "accumulation-precision"
    FAMILY_ONLY = "family-only"
    EVERY_CASE = "every-case"
    # -- findings inside one failing case
    DIVISOR_RATIO = "divisor-ratio"
    WINDOW_EDGES = "window-edges"
    PLANE_STRIDE = "plane-stride"
    BATCH_STRIDE = "batch-stride"
    LAST_PLANE = "last-plane"
    LAST_ROW = "last-row"
    LAST_COLUMN = "last-column"
    LAST_ROW_AND_COLUMN = "last-row-and-column"
    OVERLAP_ONLY = "overlap-only"
    BIASED = "biased"
    UNWRITTEN = "unwritten"
    TIES_AWAY = "ties-away"
    NOT_RNE = "not-rne"
    CAST_ROUNDING = "cast-rounding"  # one rounding mode explains every wrong element
    #: one-ULP wrong elements no single rounding of the final conversion explains
    NO_CAST_ROUNDING = "no-cast-rounding"
    # -- measured by the probe (the kernel's own M against the contract's)
    MEASURED_WINDOW_START = "measured-window-start"
    MEASURED_WINDOW_END = "measured-window-end"
    MEASURED_UNWRITTEN = "measured-unwritten"
    MEASURED_WEIGHT = "measured-weight"
    MEASURED_PLANES = "measured-planes"

    @property
    def kind(self) -> CodeKind:
        if self.value.startswith("measured-"):
            return CodeKind.MEASURED
        if self in _RULES:
            return CodeKind.RULE
        if self in _FINDINGS:
            return CodeKind.FINDING
        return CodeKind.MODEL


_RULES = frozenset({
    DiagnosisCode.LAYOUT_STRIDE, DiagnosisCode.RANK_PATH, DiagnosisCode.AXIS_MIXUP,
    DiagnosisCode.WINDOW_BOUNDS_OR_DIVISOR, DiagnosisCode.UPSAMPLING_WINDOWS,
    DiagnosisCode.ACCUMULATION_PRECISION, DiagnosisCode.FAMILY_ONLY,
    DiagnosisCode.EVERY_CASE,
})
_FINDINGS = frozenset({
    DiagnosisCode.DIVISOR_RATIO, DiagnosisCode.WINDOW_EDGES, DiagnosisCode.PLANE_STRIDE,
    DiagnosisCode.BATCH_STRIDE, DiagnosisCode.LAST_PLANE, DiagnosisCode.LAST_ROW,
    DiagnosisCode.LAST_COLUMN, DiagnosisCode.LAST_ROW_AND_COLUMN,
    DiagnosisCode.OVERLAP_ONLY, DiagnosisCode.BIASED, DiagnosisCode.UNWRITTEN,
    DiagnosisCode.TIES_AWAY, DiagnosisCode.NOT_RNE, DiagnosisCode.CAST_ROUNDING,
    DiagnosisCode.NO_CAST_ROUNDING,
})

"""The vendor's test cases of aclnnAdaptiveAvgPool3DBackward (`aclcheck import-cases`):
the adaptive kit's readers, whose vendor tensors (gradOutput, the forward's input, out)
are this operator's roles. Imported on first use (Operator.vendor_cases)."""

from aclcheck.ops.adaptive.vendor import read_vendor

__all__ = ["read_vendor"]

"""aclcheck: conformance and golden data for aclnnAdaptiveAvgPool2dBackward."""

__version__ = "0.1.0"

"""Where a vendor's own tests, the contract aclcheck predicts from and the implementation
agree or part: per imported case that states the status the vendor's test expects
(`vendor_status`), the three statuses side by side, and their counts for a run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aclcheck.cases.acl import UNSPECIFIED, status_name
from aclcheck.judging.case.verdicts import CaseVerdict

#: Cases listed by name where the vendor parts from the contract or the implementation.
MAX_LISTED = 50


@dataclass(frozen=True)
class Parting:
    """One case where the vendor's expected status is not what another side says."""

    case_id: str
    source: str
    vendor: int
    contract: int | None  # aclcheck's prediction (UNSPECIFIED: the sources part)
    implementation: int | None  # what the implementation returned (None: no status)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.case_id, "source": self.source, "vendor_status": self.vendor,
                "expected_status": self.contract, "actual_status": self.implementation}


@dataclass
class VendorAgreement:
    """Counts over the cases that state a vendor status."""

    stated: int = 0
    contract_agrees: int = 0
    contract_parts: int = 0
    contract_unspecified: int = 0  # the page and the code part; the vendor's test decides
    implementation_agrees: int = 0
    implementation_parts: int = 0
    implementation_silent: int = 0  # no status returned (a framework, a skipped case)
    parted: list[Parting] = field(default_factory=list)

    def add(self, v: CaseVerdict) -> None:
        if v.vendor_status is None:
            return
        self.stated += 1
        vendor, contract, actual = v.vendor_status, v.expected_status, v.actual_status
        if contract == UNSPECIFIED:
            self.contract_unspecified += 1
        elif contract == vendor:
            self.contract_agrees += 1
        else:
            self.contract_parts += 1
        if actual is None:
            self.implementation_silent += 1
        elif actual == vendor:
            self.implementation_agrees += 1
        else:
            self.implementation_parts += 1
        parts = contract != vendor or actual is not None and actual != vendor
        if parts and len(self.parted) < MAX_LISTED:
            self.parted.append(Parting(v.case_id, v.source, vendor, contract, actual))

    def to_json(self) -> dict[str, Any]:
        return {"stated": self.stated, "contract_agrees": self.contract_agrees,
                "contract_parts": self.contract_parts,
                "contract_unspecified": self.contract_unspecified,
                "implementation_agrees": self.implementation_agrees,
                "implementation_parts": self.implementation_parts,
                "implementation_silent": self.implementation_silent,
                "parted": [p.to_json() for p in self.parted]}


def vendor_agreement(verdicts: Iterable[CaseVerdict]) -> VendorAgreement:
    """The agreement of a run's verdicts (one pass)."""
    tally = VendorAgreement()
    for v in verdicts:
        tally.add(v)
    return tally


def agreement_line(a: VendorAgreement) -> str:
    """`vendor statuses: 53 cases; contract agrees 46, parts 0, unspecified 7; ...`"""
    impl = f"implementation agrees {a.implementation_agrees}, parts {a.implementation_parts}"
    if a.implementation_silent:
        impl += f", no status {a.implementation_silent}"
    return (f"vendor statuses: {a.stated} cases; contract agrees {a.contract_agrees}, "
            f"parts {a.contract_parts}, unspecified {a.contract_unspecified}; {impl}")


def shown_status(status: int | None) -> str:
    """A status for the table: its name, "-" for none."""
    if status is None:
        return "-"
    return "unspecified" if status == UNSPECIFIED else f"{status} {status_name(status)}"

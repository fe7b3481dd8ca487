"""How an adaptive-pooling operator's folder becomes its Operator record: every folder
lays out its modules alike (contract, families, reference; numerics, diagnose, coverage,
vendor and glue behind hooks), so the record is assembled here from the folder's name
and the few things that differ (aliases, the products caption, probe and vendor cases)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from aclcheck.cases import Case
from aclcheck.ops.operator import (
    CaseSpace,
    Diagnosis,
    Display,
    Glue,
    Hook,
    Operator,
    Probe,
)


def late(package: str, module: str, name: str) -> Hook:
    """`name` of `package`'s `module`, imported on first call (numerics, diagnose and
    coverage import judging: generate never calls them)."""
    return Hook(f"{package}.{module}", name)


def shapes_text(case: Case) -> str:
    """"[2, 3, 8, 6] <- [2, 3, 4, 3]": self's shape, then gradOutput's (shrink, hunt)."""
    return (f"{list(case.tensor_desc('self').shape)} <- "
            f"{list(case.tensor_desc('grad_output').shape)}")


def pooling_operator(package: str, *, aliases: tuple[str, ...], contract: ModuleType,
                     families: ModuleType, reference: ModuleType, case_type: type[Case],
                     values: Callable[[Case, str], np.ndarray], space: CaseSpace, glue: Glue,
                     products_note: str, contract_doc: str = "docs/contract.md",
                     probe: bool = True, vendor_cases: bool = True) -> Operator:
    """The Operator of the folder `package`: its contract's names, products and rules, its
    families, reference and the hooks into its numerics, diagnose and coverage modules;
    `probe`: linear in gradOutput (the probe's geometry in glue); `vendor_cases`: the
    vendor's test cases read by its vendor module."""
    return Operator(
        name=contract.OPERATOR,
        aliases=aliases,
        api=contract.API,
        roles=contract.ROLES,
        spatial_rank=contract.SPATIAL_RANK,
        case_type=case_type,
        products=contract.PRODUCTS,
        dtypes=contract.COMPUTE_DTYPES,
        formats=contract.FORMATS,
        format_rank=contract.FORMAT_RANK,
        ranks=contract.VALID_RANKS,
        expected_status=contract.expected_status,
        families=families.ALL_FAMILIES,
        default_families=families.DEFAULT_FAMILIES,
        shape_case=families.shape_case,
        invalid_cases=families.invalid_cases,
        values=values,
        space=space,
        golden=reference.golden,
        model=late(package, "numerics", "model"),
        paths=late(package, "numerics", "paths"),
        case_bytes=reference.case_bytes,
        glue=glue,
        display=Display(
            axis_names=late(package, "numerics", "axis_names"), map_axes=("H", "W"),
            shapes_text=shapes_text, magnitude_source="|gradOutput|",
            products_note=products_note, contract_doc=contract_doc),
        family_notes=families.NOTES,
        coverage=late(package, "coverage", "case_coverage"),
        diagnosis=Diagnosis(facts=late(package, "diagnose", "facts"),
                            evidence=late(package, "diagnose", "evidence"),
                            windows=late(package, "diagnose", "windows"),
                            family=late(package, "diagnose", "family")),
        vendor_cases=late(package, "vendor", "read_vendor") if vendor_cases else None,
        probe=(Probe(linear_role="grad_output", geometry=late(package, "glue", "probe_geometry"))
               if probe else None),
    )

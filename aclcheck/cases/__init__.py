"""The vocabulary every stage shares: what a call is (its tensors by role, the record of a
case, what the contract expects), what comes back from one, memory layouts and the aclnn
ABI. Types and small pure helpers only; the operators are aclcheck.ops.

    record     Role, TensorDesc, Call, Check, Expectation, Case, CaseData, derive_seed
    call       CallInputs, Outcome, ReturnedValue, Capabilities
    layouts    StridedTensor and the memory layouts
    acl        status codes, aclFormat names, hardware products
    values     value draws every operator's inputs use
"""

from aclcheck.cases.record import (
    Call,
    Case,
    CaseData,
    Check,
    Expectation,
    RecordField,
    Role,
    TensorDesc,
    derive_seed,
    join_id,
)

__all__ = ["Call", "Case", "CaseData", "Check", "Expectation", "RecordField", "Role",
           "TensorDesc", "derive_seed", "join_id"]

"""The run's diagnosis: why its failing cases fail, ranked by strength of evidence.

    codes      the stable names of every cause (DiagnosisCode) and their kinds
    reproduce  does a what-if model reproduce a kernel's output (one case's clues)
    clues      where one failing case's wrong elements sit
    signature  which groups of cases fail, and the rules that read the pattern
    probe      the kernel's own windows and weights, measured on one-hot inputs
    probe_fit  measured against contracted: the differences, fitted to formulas
    ranking    the run's diagnosis: every piece of evidence ranked (RunDiagnosis)
    vendor     where a vendor's tests, the contract and the implementation part
"""

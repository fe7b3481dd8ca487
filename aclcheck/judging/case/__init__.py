"""Judging one case: from (case model, data, outcome) to its verdict.

    model            what judging knows of a case, built once by its operator (CaseModel)
    judge            the rules of conformance: (case model, data, outcome) -> CaseVerdict
    expressible      why an adapter cannot express a call (SKIP before it runs)
    compare          the chunked comparison of one output under several standards
    pieces           one chunk of a comparison: the quantities every standard reads
    metrics          the error metrics, summed chunk by chunk
    overflow         special values under each overflow mode
    budget           the per-element error budget of aclcheck's own standard
    exactness        which elements a product's path computes exactly; the RNE check there
    roundings        the rounding modes of a float format and a value's two neighbours
    rule             what a tolerance standard is (Standard, its tally and result)
    default_standard aclcheck's own standard
    standards        the published standards and every standard by name
    overrides        TOML overrides of the standards' numbers
    hints            the worst elements, hints at the likely bug, special values accepted
    evidence         where the errors sit: the error map, failing planes, histogram
    magnitude        how large a failing case's errors are
    verdicts         the closed set of verdicts and the per-case record
"""

"""Judging: from a case, its golden and what an implementation returned to a verdict.

    model       what judging knows of a case, built once by its operator (CaseModel)
    judge       the rules of conformance: (case model, data, outcome) -> CaseVerdict
    expressible why an adapter cannot express a call (SKIP before it runs)
    compare     the chunked comparison of one output under several standards
    metrics     the error metrics, summed chunk by chunk
    pieces      one chunk of a comparison: the quantities every standard reads
    budget      the per-element error budget of aclcheck's own standard
    exactness   which elements a product's path computes exactly; the RNE check there
    standards   the named tolerance standards and their overrides
    findings    worst elements, hints at the likely bug, special values accepted
    evidence    where the errors sit: the error map, failing planes, histogram
    verdicts    the closed set of verdicts and the per-case record
    xfail       known-failure lists
    gate        when a run passes: exit-0 rules beyond each case's verdict
"""

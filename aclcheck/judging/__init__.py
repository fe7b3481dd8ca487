"""Judging: from a case, its golden and what an implementation returned to a verdict, and
from a run's verdicts to what they say. Three stages, each a subpackage; imports run down
(case <- diagnosis <- gate):

    case       one case: its model, the comparison under the standards, its verdict
    diagnosis  the run's failures: what-if models, clues, signatures, the probe, ranked
    gate       the run as a whole: kept verdicts, known failures, pass or fail
"""

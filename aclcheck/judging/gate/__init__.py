"""The run as a whole: its verdicts kept, known failures applied, passed or failed.

    spool   a run's verdicts kept on disk as they come, read back as a sequence
    xfail   known-failure lists: new failures told from known ones
    gate    exit 0 only when a correct kernel was actually judged
"""

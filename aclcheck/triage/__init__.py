"""Triage: from a failing verdict to a fix. shrink: the smallest call that still fails
the same way; hunt: random valid calls judged until one fails."""

"""Exit codes and the exceptions that map onto them (one place, documented in --help)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_NONCONFORMANT = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_INTERNAL = 4

EXIT_CODES_HELP = (
    "Exit codes: 0 all conformant / success, 1 nonconformance found or the gate failed "
    "(e.g. no case judged), 2 usage error, 3 unreadable or corrupt input file, 4 internal "
    "error."
)


class AclcheckError(Exception):
    """An error with a one-line message for the user and an exit code."""

    exit_code = EXIT_INTERNAL


class UsageError(AclcheckError):
    """Bad arguments or a bad suite/case definition."""

    exit_code = EXIT_USAGE


class InputFileError(AclcheckError):
    """An input file that cannot be read, is damaged, or has the wrong schema."""

    exit_code = EXIT_BAD_INPUT

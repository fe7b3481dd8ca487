"""Exit codes and every error type aclcheck raises for its user (one place, documented in
--help). Each type carries its exit code; the two entry points map them once: the CLI in
aclcheck.cli.common.handle_errors, the pytest plugin in its GoldenGate.

Errors are raised where the problem is found, with the class the caller asked for
(configfile.read_document takes it as an argument), so no layer re-raises another's
error under a new class.
"""

from __future__ import annotations

from typing import Self

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
    """An error with a one-line message for the user and an exit code.

    show_usage: the CLI shows it as click shows usage errors (the command's usage line,
    then the message), for mistakes in what was asked rather than in a file's content.
    """

    exit_code = EXIT_INTERNAL
    show_usage = False
    #: where the problem sits (set by `at`): the file or source, entry number, field
    source: str | None = None
    entry: int | None = None
    field: str | None = None
    message: str = ""

    def __init__(self, *args: object, option: str | None = None) -> None:
        super().__init__(*args)
        #: the command-line option whose value is wrong ("--standard"), where one is:
        #: an entry point that spells its options otherwise names it its own way
        self.option = option

    @classmethod
    def at(cls, source: object, message: str, entry: int | None = None,
           field: str | None = None) -> Self:
        """The error located in a file: 'SOURCE: entry N, field 'name': message' (entry
        and field when given), the one style of every file-content error."""
        where = str(source)
        if entry is not None:
            where += f": entry {entry}"
        if field is not None:
            where += f", field {field!r}" if entry is not None else f": field {field!r}"
        exc = cls(f"{where}: {message}")
        exc.source, exc.entry, exc.field, exc.message = str(source), entry, field, message
        return exc


class UsageError(AclcheckError):
    """Bad arguments or a bad suite/case definition."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError, ValueError):
    """A person-written file (tolerances, known failures, ...) that cannot be used."""


class SuiteError(UsageError, ValueError):
    """A suite definition that cannot be built: bad names in a selection or a case file."""

    show_usage = True


class UnknownImplementation(UsageError, ValueError):
    """--impl names nothing we can build."""

    show_usage = True


class ImplementationUnavailable(UsageError, RuntimeError):
    """The adapter exists but cannot run here (a package or device is missing). str() is
    the reason; `spec` (when known) is the --impl value the CLI names."""

    def __init__(self, reason: str, spec: str | None = None) -> None:
        super().__init__(reason)
        self.spec = spec


class OutputFileError(UsageError):
    """The output path cannot be written (missing or read-only folder, existing file)."""


class InputFileError(AclcheckError):
    """An input file that cannot be read, is damaged, or has the wrong schema. `source`
    is the file and `message` what is wrong with it (when raised through `at`)."""

    exit_code = EXIT_BAD_INPUT

    def detail(self, path: object) -> str:
        """What is wrong with the file `path` (the whole line when it is about another)."""
        return self.message if self.source == str(path) else str(self)


class WorkerLost(AclcheckError):
    """An executor's worker died twice on the same piece of aclcheck's own work (killed,
    or out of memory): nothing is wrong with the input, and nothing half-made is kept."""


def message_of(exc: AclcheckError) -> str:
    """The one line the CLI prints for an error (ImplementationUnavailable names the
    --impl value it is about)."""
    if isinstance(exc, ImplementationUnavailable) and exc.spec:
        return f"--impl {exc.spec}: not available here: {exc}"
    return str(exc)


def first_sentence(exc: BaseException) -> str:
    """An exception from outside aclcheck in a few words (its type and first sentence),
    for a verdict's message: an executor's lost worker, a broken pool."""
    text = " ".join(str(exc).split()).split(". ")[0]
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__

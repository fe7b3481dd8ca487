"""Text that came from data (case ids, messages, exception text, file names), made safe
to print: never parsed as rich markup, control characters shown escaped, lone
surrogates shown as escapes instead of crashing the encoder."""

from __future__ import annotations

import re

from rich.text import Text

# C0 controls except tab and newline, DEL, C1 controls, bidirectional overrides and
# isolates (they reorder what the reader sees), lone surrogates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e"
                     "\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object) -> str:
    """str(text) with control characters and lone surrogates as visible escapes."""
    return _UNSAFE.sub(_escape, str(text))


def data_text(text: object, style: str = "") -> Text:
    """A rich Text of data: printed literally (no markup, no emoji codes), in `style`."""
    return Text(printable(text), style=style)

"""Text from an attempt, made safe for a terminal: the one function every renderer calls on it.

An attempt controls many strings the learner later reads: its exceptions' type names and messages,
the lines of its traceback, its layers' and parameters' names, the source lines a report quotes,
its file's name and what it printed. Written raw, a control character in one of them is a command
to the terminal (``ESC [2J`` clears the screen, ``ESC ]`` sets the title, a carriage return writes
over the verdict, U+202E turns the rest of a line around): an attempt could draw a green
"✓ mha.py passed" above its real verdict. :func:`visible` writes each such character the way
Python writes it in a string literal (``\\x1b``, ``\\r``, ``\\u202e``), so the text reads as what
it is and cannot drive the terminal.

It is applied at the edge, where a text becomes a line of the Rich report, of the pytest failure
text, of the drill or the interview; the grader's results and ``check --json`` keep the text as the
attempt made it. Torch-free and cheap: a text without such characters is returned as it is.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline are matched separately), DEL and the C1 controls (U+0080-U+009F:
# U+009B is the one-character CSI of 8-bit terminals), and the invisible format characters that
# move or hide text: soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width space
# and joiners, the bidi marks, embeddings, overrides and isolates, the line and paragraph
# separators, word joiner and invisible operators, the byte-order mark, the interlinear
# annotation marks and the tag characters. And the lone surrogates by which Python keeps the bytes
# of a file name that is not UTF-8 (U+DCFF for the byte 0xFF): no terminal can be sent those.
_HIDDEN = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ud800-\udfff\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
)
_IN_TEXT = re.compile(f"\r\n|[{_HIDDEN}]")  # a text of lines: tab and newline are kept
_IN_LINE = re.compile(f"[\t\n{_HIDDEN}]")  # one line: tab and newline are shown too
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    found = match.group()
    if found == "\r\n":  # a Windows line end in a text of lines is a line end
        return "\n"
    if found in _NAMED:
        return _NAMED[found]
    code = ord(found)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: object, *, one_line: bool = False) -> str:
    """``text`` with every control or invisible format character written out (``\\x1b``).

    A text of lines (a message, a traceback, printed output) keeps its newlines and tabs (Rich
    expands tabs to spaces), and a ``\\r\\n`` line end becomes ``\\n``; ``one_line=True`` (a name,
    a file name, a quoted source line) shows them as ``\\n`` and ``\\t`` too, so that a name cannot
    start a line of its own."""
    text = text if isinstance(text, str) else str(text)
    pattern = _IN_LINE if one_line else _IN_TEXT
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


__all__ = ["visible"]

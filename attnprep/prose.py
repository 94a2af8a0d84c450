"""Text that wraps the way Chinese is set, for every Rich output of attnprep (report, help,
drill, interview): :class:`Prose` is a :class:`rich.text.Text` that breaks Chinese between
characters, never before a closing mark or after an opening one, and English between words.
Torch-free and light: `--help` uses it.
"""

from __future__ import annotations

import functools
import re

from rich.cells import cell_len, chop_cells
from rich.containers import Lines
from rich.measure import Measurement
from rich.text import Text

# Rich breaks lines at spaces only: a Chinese sentence, written without spaces, is one "word" that
# moves whole to the next line (leaving a half-empty line behind) and makes a table column as wide
# as the sentence. Chinese may break between any two characters, except before a closing mark
# (，。）…) and after an opening one (（“…). A shape such as (B, H, T, D) stays on one line.
_IDEOGRAPH = "\u2e80-\u2fff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_OPENING = "（［｛「『《〈【〔“‘"
_CLOSING = "，。、；：！？）］｝」』》〉】〕”’…"
_SHAPE = r"\((?:[^()\s,]{1,20}, ){1,7}[^()\s,]{1,20}\)"
# A number and its unit (0.53 s, 16 KiB, 40 %) stay on one line too.
_NUMBER_UNIT = r"\d[\d.,:]*\s(?:s|ms|µs|min|B|KiB|MiB|GiB|TiB|%|×)(?![^\s.,;:)\]，。；：）])"
_UNIT = (
    rf"\s*(?:[{_OPENING}]*(?:[{_IDEOGRAPH}]|(?:{_SHAPE}|{_NUMBER_UNIT}|[^\s{_IDEOGRAPH}{_OPENING}{_CLOSING}])+)[{_CLOSING}]*|\S)\s*|\s+"
)
WIDE = re.compile(f"[{_IDEOGRAPH}{_OPENING}{_CLOSING}]")
NUMBER_UNIT = re.compile(_NUMBER_UNIT)


@functools.cache
def _unit() -> re.Pattern:
    """The pattern of one unit, compiled on first use (~18 ms: `--help` imports this module)."""
    return re.compile(_UNIT)


def _units(text: str):
    """(start, unit) of the pieces a line may break between."""
    position = 0
    while position < len(text):
        match = _unit().match(text, position)
        yield position, match.group()
        position = match.end()


def break_points(text: str, width: int, fold: bool) -> list[int]:
    """Where to break ``text`` into lines of ``width`` cells: greedily between the units of
    :func:`_units`, a unit longer than a line folded (as Rich's own word wrap does with words)."""
    breaks: list[int] = []
    offset = 0
    for start, unit in _units(text):
        size = cell_len(unit.rstrip())
        if width - offset >= size:
            offset += cell_len(unit)
        elif size > width and fold:
            pieces = chop_cells(unit, width)
            for n, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if n == len(pieces) - 1:
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(unit)
    return breaks


class Prose(Text):
    """A :class:`rich.text.Text` that wraps Chinese between characters (see :func:`_divide`) and
    measures its narrowest width by those units. Same as Text for English."""

    def wrap(self, console, width, *, justify=None, overflow=None, tab_size=8, no_wrap=None) -> Lines:
        wrap_justify = justify or self.justify or "default"
        wrap_overflow = overflow or self.overflow or "fold"
        if (no_wrap if no_wrap is not None else self.no_wrap) or overflow == "ignore" or not (
                WIDE.search(self.plain) or NUMBER_UNIT.search(self.plain)):
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            new_lines = line.divide(break_points(line.plain, width, fold=wrap_overflow == "fold"))
            for piece in new_lines:  # the blank a line broke at (Text.rstrip_end counts characters, not cells)
                if cell_len(piece.plain) > width:
                    piece.rstrip()
            new_lines.justify(console, width, justify=wrap_justify, overflow=wrap_overflow)
            for piece in new_lines:
                piece.truncate(width, overflow=wrap_overflow)
            lines.extend(new_lines)
        return lines

    def __rich_measure__(self, console, options) -> Measurement:
        measured = super().__rich_measure__(console, options)
        if not WIDE.search(self.plain):
            return measured
        narrowest = max((cell_len(unit.strip()) for _, unit in _units(self.plain)), default=0)
        return Measurement(min(narrowest, measured.maximum), measured.maximum)


class Block:
    """A :class:`Prose` printed on its own (``console.print(Block(prose))``): Rich joins the Text
    objects given to ``print`` into one plain Text, which would wrap Chinese at spaces only."""

    def __init__(self, prose: Text) -> None:
        self.prose = prose

    def __rich_console__(self, console, options):
        yield from self.prose.__rich_console__(console, options)  # its lines and its end

    def __rich_measure__(self, console, options) -> Measurement:
        return self.prose.__rich_measure__(console, options)


def printable(*objects):
    """``objects`` for ``console.print``, each :class:`Prose` in a :class:`Block`."""
    return tuple(Block(o) if isinstance(o, Prose) else o for o in objects)

"""Tables that fit the terminal: `list` and `stats` offer a few layouts (sets of columns), widest
first, and the console's width picks one.

Rich alone squeezes a table that is too wide by wrapping its wrappable columns, breaking words
that do not fit, and then cutting every column with ``…``, ids included. Here a layout is taken
only if it fits whole: every no-wrap cell on one line, the one wrappable column at least as wide
as its longest word and its ``min_width``. Among those, the first whose rows stay one line each
(``slack`` extra lines allowed) wins, else the first that fits at all; layouts from
``fallback_from`` on (say, those without the titles) are taken only when none before them fits.

It works on the cells' plain text, so that choosing costs next to nothing (`list` runs on every
start of a practice session): no Rich measurement or rendering until the chosen table is printed.
Torch-free, prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from rich.cells import cell_len

T = TypeVar("T")


class Col(NamedTuple):
    """One column as laid out: its header and cells as plain text."""

    texts: Sequence[str]  # the header, then the cells
    wrap: bool = False  # may wrap between words (the table has at most one such column)
    min_width: int = 0


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def wrapped_lines(text: str, width: int) -> int:
    """Lines ``text`` takes wrapped greedily between words at ``width`` (as Rich wraps)."""
    total = 0
    for line in text.splitlines() or [""]:
        lines, used = 1, 0
        for word in line.split():
            size = cell_len(word)
            if used and used + 1 + size > width:
                lines, used = lines + 1, size
            else:
                used = used + 1 + size if used else size
        total += lines
    return total


def choose(
    width: int,
    layouts: Sequence[T],
    columns: Callable[[T], list[Col]],
    *,
    gap: int,
    slack: int | None = 1,
    fallback_from: int | None = None,
) -> T:
    """The layout to print at ``width``. ``columns(layout)``: its columns; ``gap``: cells between two
    columns (padding and rule); ``slack``: extra lines allowed in all before a narrower layout is
    preferred (None: any height). The last layout should be one that always fits (the ids)."""
    first_fit: T | None = None
    for index, layout in enumerate(layouts):
        if first_fit is not None and fallback_from is not None and index >= fallback_from:
            return first_fit
        cols = columns(layout)
        spacing = gap * (len(cols) - 1)
        natural = [max(col.min_width, *(cell_len(line) for t in col.texts for line in t.splitlines() or [""]))
                   for col in cols]
        fixed = sum(n for n, col in zip(natural, cols) if not col.wrap) + spacing
        wrapping = [(n, col) for n, col in zip(natural, cols) if col.wrap]
        if not wrapping:
            if fixed <= width:
                return layout
            continue
        (wrap_natural, wrap_col), *_ = wrapping
        room = width - fixed
        if room < max(wrap_col.min_width, *(_longest_word(t) for t in wrap_col.texts)):
            continue
        if slack is None or wrap_natural <= room:
            return layout
        if first_fit is None:
            first_fit = layout
        extra = sum(wrapped_lines(t, room) - 1 for t in wrap_col.texts[1:])
        if extra <= slack:
            return layout
    return first_fit if first_fit is not None else layouts[-1]

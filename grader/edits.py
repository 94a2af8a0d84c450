"""A named mistake as data: an edit of the reference solution.

An exercise declares, in ``[grading] edits`` of its ``exercise.toml``, each of its mistake knobs as a
list of ``{old, new}`` text replacements of ``solutions/<id>.py``; the mistaken variant is the
reference with those edits made (two knobs at once: both lists, in order, an edit both share made
once). Every kind that grades by edits compiles its variants through :class:`EditedReference`.

Where a kind tries its variants with more than one mask fill (``-inf`` and ``-1e9``), the exercise
names the reference's fill (``[grading] fill``, e.g. ``float("-inf")``): a variant with another fill
is the edited source with every occurrence of that text written as the other fill.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable


class EditError(ValueError):
    """An edit of the reference solution that does not apply (its text is not found exactly once)."""


def edited_source(source: str, edits: list[dict]) -> str:
    """``source`` with every ``{old, new}`` made, in order; each ``old`` must be there exactly once."""
    for edit in edits:
        old, new = edit["old"], edit["new"]
        if source.count(old) != 1:
            raise EditError(f"{old!r} is in the reference {source.count(old)} times, not once")
        source = source.replace(old, new)
    return source


def fill_text(fill: float) -> str:
    """``fill`` as Python source: ``float("-inf")`` or its plain repr (``-1000000000.0``)."""
    return f'float("{fill}")' if math.isinf(fill) else repr(float(fill))


class EditedReference:
    """The reference solution at ``path`` and its mistakes as edits (knob -> ``{old, new}`` list),
    compiled once per (knob set, fill) into a namespace of the solution's top-level names.

    With no knob and no other fill it is the reference itself, compiled under its own file name (the
    divergence finder traces it by that name)."""

    def __init__(self, path: Path, edits: dict[str, list[dict]], fill: str = ""):
        self.path = path
        self.edits = edits
        self.fill = fill  # the reference's mask fill as written, "" when the kind tries one fill only
        self._source: str | None = None
        self._compiled: dict[tuple, dict[str, Any]] = {}

    def source(self, knobs: Iterable[str] = (), fill: float | None = None) -> str:
        """The reference's text with the edits of ``knobs`` made and its fill written as ``fill``."""
        if self._source is None:
            self._source = self.path.read_text(encoding="utf-8")
        edits = list({(e["old"], e["new"]): e for k in knobs for e in self.edits[k]}.values())  # shared edits once
        source = edited_source(self._source, edits)
        if fill is not None and self.fill and fill_text(fill) != self.fill:
            source = source.replace(self.fill, fill_text(fill))
        return source

    def namespace(self, knobs: tuple[str, ...] = (), fill: float | None = None) -> dict[str, Any]:
        """The top-level names of the edited reference (compiled on first use, then kept): two knobs
        whose edits clash raise :class:`EditError` here."""
        key = (knobs, None if fill is None or not self.fill or fill_text(fill) == self.fill else fill_text(fill))
        if key not in self._compiled:
            source = self.source(knobs, fill)
            reference = key == ((), None)
            label = " + ".join(knobs) + ("" if key[1] is None else f", filled with {key[1]}")
            filename = str(self.path.resolve()) if reference else f"<{self.path.name} with {label}>"
            namespace: dict[str, Any] = {"__name__": "attnprep_reference" if reference else "attnprep_variant"}
            if reference:
                exec(compile(source, filename, "exec"), namespace)  # our own reference
            else:  # edited: block by block, each block compiled once per process (edited_blocks)
                exec_edited(source, f"<{self.path.name}, edited>", namespace)
            self._compiled[key] = namespace
        return self._compiled[key]

    def forget(self) -> None:
        """Drop every compiled namespace (a forked child then holds none of the reference)."""
        self._compiled.clear()


FILL_NAME = "_attnprep_fill"  # the name a variant's source reads its mask fill from


class FillReference(EditedReference):
    """An :class:`EditedReference` whose variants are tried with more than one mask fill, run with
    the fill as a value: the reference's fill as written (``fill``) becomes the name ``FILL_NAME``
    in the compiled source, bound to the fill tried, so that one variant's two fills share their
    compiled code (:meth:`source` still writes the fill itself, as the base class does).

    Where the reference fills two masks (a causal and a padding one) at once, merged, a variant is
    also tried with a fill per mask (a ``variants.MaskFills``, duck-typed: a ``fill`` with
    ``apply(scores, padding_blocked, causal_blocked)``): ``split`` (``[grading] mask_split``) are
    edits, made after a knob's, that rewrite the one fill as a call ``mask_fills(scores,
    ~padding_allowed, ~causal_allowed)``, and the namespace holds ``mask_fills``, the fill's own
    ``apply``. A knob whose edits take away the text the split edits (it merges the masks, or fills
    none of them) keeps one fill: the padding's."""

    def __init__(self, path: Path, edits: dict[str, list[dict]], fill: str, split: list[dict] = ()):
        super().__init__(path, edits, fill)
        self.split = list(split)

    def _split_source(self, knobs: Iterable[str]) -> str | None:
        """The source with the knobs' edits and the split made, or None where the split no longer applies."""
        if not self.split:
            return None
        if self._source is None:
            self._source = self.path.read_text(encoding="utf-8")
        edits = list({(e["old"], e["new"]): e for k in knobs for e in self.edits[k]}.values())
        source = edited_source(self._source, edits)  # a clash of the knobs raises, as with one fill
        shared = {(e["old"], e["new"]) for e in edits}
        try:
            return edited_source(source, [e for e in self.split if (e["old"], e["new"]) not in shared])
        except EditError:
            return None

    def source(self, knobs: Iterable[str] = (), fill=None) -> str:
        if fill is None or isinstance(fill, (int, float)):
            return super().source(knobs, fill)
        knobs = tuple(knobs)
        split = self._split_source(knobs)
        return split if split is not None else super().source(knobs, float(fill))

    def namespace(self, knobs: tuple[str, ...] = (), fill=None) -> dict[str, Any]:
        if fill is None or not self.fill:
            return super().namespace(knobs, fill)
        key = (knobs, fill)
        if key not in self._compiled:
            split = None if isinstance(fill, (int, float)) else self._split_source(knobs)
            namespace: dict[str, Any] = {"__name__": "attnprep_variant"}
            if split is not None:  # a fill per mask
                source = split
                namespace["mask_fills"] = fill.apply
            else:  # one fill (the padding's where a fill per mask was asked)
                source = super().source(knobs).replace(self.fill, FILL_NAME)
                namespace[FILL_NAME] = float(fill)
            exec_edited(source, f"<{self.path.name}, edited>", namespace)
            self._compiled[key] = namespace
        return self._compiled[key]


# (file name, first line, text) -> code: the top-level blocks of edited references, compiled once per
# process. Most mistakes edit one function or class and two knobs often edit two different ones, so
# a variant mostly compiles none or one block instead of the whole module (compiling dominates
# the cost of a variant that fails on its first case).
_BLOCKS: dict[tuple[str, int, str], Any] = {}
BLOCKS_KEPT = 20000  # then the cache starts again (a long test session grades thousands of variants)
_TOP = ("def ", "class ", "async def ", "@")


def edited_blocks(source: str) -> list[tuple[int, str]]:
    """(first line, text) of each top-level block of ``source``: cut before every top-level ``def``,
    ``class`` or decorator (a decorator and its definition stay together)."""
    lines = source.splitlines(keepends=True)
    cuts = [0] + [i for i, line in enumerate(lines) if i and line.startswith(_TOP) and not lines[i - 1].startswith("@")]
    return [(a, "".join(lines[a:b])) for a, b in zip(cuts, cuts[1:] + [len(lines)])]


def exec_edited(source: str, filename: str, namespace: dict[str, Any]) -> None:
    """Run ``source`` in ``namespace`` block by block (line numbers kept), each block's code taken
    from the process's cache when that text was compiled before; a source whose blocks do not
    compile apart (a top-level ``def`` inside a string) is compiled whole."""
    try:
        codes = []
        for first, text in edited_blocks(source):
            key = (filename, first, text)
            code = _BLOCKS.get(key)
            if code is None:
                if len(_BLOCKS) >= BLOCKS_KEPT:
                    _BLOCKS.clear()
                code = _BLOCKS[key] = compile("\n" * first + text, filename, "exec")
            codes.append(code)
    except SyntaxError:
        codes = [compile(source, filename, "exec")]
    for code in codes:
        exec(code, namespace)  # our own reference, edited

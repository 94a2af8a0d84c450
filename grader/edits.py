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


def variant_code(filename: str) -> bool:
    """Whether code compiled under ``filename`` is a variant's: the reference edited, as this module
    names it (``<mha.py, edited>``, ``<mha.py with missing_scale>``)."""
    return filename.startswith("<") and (filename.endswith(", edited>") or " with " in filename)


def edited_source(source: str, edits: list[dict]) -> str:
    """``source`` with every ``{old, new}`` made, in order; each ``old`` must be there exactly once."""
    for edit in edits:
        old, new = edit["old"], edit["new"]
        if source.count(old) != 1:
            raise EditError(f"{old!r} is in the reference {source.count(old)} times, not once")
        source = source.replace(old, new)
    return source


def knobs_of(knob) -> tuple[str, ...]:
    """What a kind's ``variant`` is given as its knobs: a knob, or a tuple of knobs made together
    (``""``: no mistake), as a tuple in the order given."""
    return tuple(k for k in ((knob,) if isinstance(knob, str) else knob) if k)


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

    def _made(self, knobs: Iterable[str]) -> tuple[str, list[dict]]:
        """The reference's text with the edits of ``knobs`` made (an edit two knobs share made once),
        and those edits."""
        if self._source is None:
            self._source = self.path.read_text(encoding="utf-8")
        edits = list({(e["old"], e["new"]): e for k in knobs for e in self.edits[k]}.values())
        return edited_source(self._source, edits), edits

    def source(self, knobs: Iterable[str] = (), fill: float | None = None) -> str:
        """The reference's text with the edits of ``knobs`` made and its fill written as ``fill``."""
        source = self._made(knobs)[0]
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
        source, edits = self._made(knobs)  # a clash of the knobs raises, as with one fill
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


def _compiled(text: str, filename: str):
    """``compile(text, filename, "exec", dont_inherit=True)``, kept per process with the blocks (a
    kind is built for every grade, its variants compiled again for the cases not kept yet)."""
    key = (filename, -1, text)
    code = _BLOCKS.get(key)
    if code is None:
        code = compile(text, filename, "exec", dont_inherit=True)
        if len(_BLOCKS) >= BLOCKS_KEPT:
            _BLOCKS.clear()
        _BLOCKS[key] = code
    return code


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


# --- a fill per mask -------------------------------------------------------------------------------
#
# A kind that tries each of the reference's masks with a fill of its own (variants.MaskFills: -inf for
# the padding and -1e9 for the causal mask, the other order, or the masks added as biases) names the
# masks its exercise's reference fills (``[grading] fill_sites``: mask -> the words its masked_fill's
# mask argument names, in the order the reference fills them). Every ``X.masked_fill(M, <fill>)`` of
# the edited source is then written ``__mask_fill__("<mask>", X, M)``, the mask being the first whose
# word ``M`` names (none: the first mask's), and ``__mask_fill__`` fills as the fills say.


def _sites(source: str, fill: str, sites: dict[str, list[str]]) -> list[tuple[int, int, str, str, str]]:
    """The ``masked_fill`` calls of ``source`` whose fill is written ``fill``: (start, end) byte
    offsets, the mask they fill, and their receiver's and mask's source."""
    import ast

    data = source.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def text(node) -> str:
        return data[starts[node.lineno - 1] + node.col_offset: starts[node.end_lineno - 1] + node.end_col_offset].decode("utf-8")

    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "masked_fill"
                and len(node.args) == 2 and not node.keywords and text(node.args[1]) == fill):
            continue
        receiver, mask = text(node.func.value), text(node.args[0])
        site = next((name for name, words in sites.items() if any(w in mask for w in words)), next(iter(sites)))
        found.append((starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset,
                      site, receiver, mask))
    found.sort()
    if any(a[1] > b[0] for a, b in zip(found, found[1:])):
        raise EditError(f"a masked_fill with {fill} inside another one")
    return found


def mask_filled_source(source: str, fill: str, sites: dict[str, list[str]], first: str) -> str:
    """``source`` with each ``masked_fill`` of ``fill`` a call of ``__mask_fill__``; any other
    ``fill`` (a ``torch.full`` of it) is the fill of the mask ``first``, ``__first_fill__``."""
    data = source.encode("utf-8")
    for begin, end, site, receiver, mask in reversed(_sites(source, fill, sites)):
        data = data[:begin] + f"__mask_fill__({site!r}, {receiver}, {mask})".encode("utf-8") + data[end:]
    return data.decode("utf-8").replace(fill, f"__mask_fill__.value({first!r})")


class MaskFiller:
    """``__mask_fill__`` of a reference that fills its masks one by one, in the order of ``sites``,
    each with its fill of ``fills`` (a ``variants.MaskFills``, duck-typed: its ``fill`` holds what
    the orders mean)."""

    def __init__(self, sites: list[str], fills):
        self.sites, self.fills = sites, fills

    def value(self, site: str, dtype=None) -> float:
        return self.fills.value(site, dtype)

    def __call__(self, site: str, scores, blocked):
        return self.fills.fill(site, scores, blocked, tuple(self.sites[: self.sites.index(site)]))


def _common_prefix(a: str, b: str) -> int:
    """How many first characters ``a`` and ``b`` share (by halving, in C-speed slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class MaskFilledReference(EditedReference):
    """An :class:`EditedReference` whose variants are also compiled with a fill per mask (see
    :func:`mask_filled_source`; ``sites`` is the exercise's ``[grading] fill_sites``), and compiled
    in less time, since a diagnosis may try hundreds of them: the fill is a name (``FILL_NAME``),
    so both fills share one compile; when the edits change one method of a class, only that method
    is compiled (at its lines), in a subclass of the reference's class."""

    def __init__(self, path: Path, edits: dict[str, list[dict]], fill: str, sites: dict[str, list[str]]):
        super().__init__(path, edits, fill)
        self.sites = {name: list(words) for name, words in sites.items()}
        self._methods: list[tuple[int, int, str, str, int]] | None = None
        self._code: dict[tuple[str, ...], tuple] = {}  # knobs -> (code, the class edited and the method, or None)

    def methods(self) -> list[tuple[int, int, str, str, int]]:
        """The methods of the reference's top-level classes: (start, end) offsets of their whole
        lines, class, name, first line."""
        if self._methods is None:
            import ast

            from attnprep.grader.parsing import parsed

            source = self.source()
            starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"] + [len(source)]  # ast's lines
            self._methods = [(starts[f.lineno - 1], starts[f.end_lineno], c.name, f.name, f.lineno)
                             for c in parsed(source).body if isinstance(c, ast.ClassDef)
                             for f in c.body if isinstance(f, ast.FunctionDef) and not f.decorator_list]
        return self._methods

    def compiled(self, knobs: tuple[str, ...], per_mask: bool = False) -> tuple:
        """(code, (class, method) or None) of the reference with the edits of ``knobs``, its fill
        written ``FILL_NAME`` (``per_mask``: its masked_fills calls of ``__mask_fill__``): the code of
        the one method they change, else of the whole source."""
        key = (knobs, per_mask)
        if key not in self._code:
            import textwrap

            reference, edited = self.source(), self.source(knobs)
            label = " + ".join(knobs) or "no mistake"
            filename = f"<{self.path.name} with {label}{', a fill per mask' if per_mask else ''}>"

            def written(text: str) -> str:
                if per_mask:
                    return mask_filled_source(text, self.fill, self.sites, next(iter(self.sites)))
                return text.replace(self.fill, FILL_NAME) if self.fill else text

            prefix = _common_prefix(reference, edited)
            suffix = min(_common_prefix(reference[::-1], edited[::-1]), min(len(reference), len(edited)) - prefix)
            found = None
            for start, end, cls, name, line in self.methods():
                if start <= prefix and len(reference) - suffix <= end and knobs:
                    text = textwrap.dedent(edited[start: len(edited) - (len(reference) - end)])
                    if "super(" in text or "__class__" in text:  # needs its class's cell: the whole source
                        break
                    try:
                        found = (_compiled("\n" * (line - 1) + written(text), filename), (cls, name))
                    except SyntaxError:  # not a method on its own: the whole source below
                        pass
                    break
            if found is None:
                found = (_compiled(written(edited), filename), None)
            self._code[key] = found
        return self._code[key]

    def _namespace(self, knobs: tuple[str, ...], names: dict[str, Any], per_mask: bool) -> dict[str, Any]:
        """The top-level names of the reference with the edits of ``knobs`` compiled with ``names``
        (its fill) defined."""
        code, method = self.compiled(knobs, per_mask)
        if method is None:
            namespace: dict[str, Any] = {"__name__": "attnprep_variant", **names}
            exec(code, namespace)  # our own reference, edited
            return namespace
        reference = super().namespace(())
        cls, name = method
        scope = {**reference, **names}
        exec(code, scope)  # one method of our own reference, edited
        base = reference[cls]
        edited = type(base.__name__, (base,), {name: scope[name], "__module__": base.__module__, "__qualname__": base.__qualname__})
        return {**reference, cls: edited}

    def namespace(self, knobs: tuple[str, ...] = (), fill: float | None = None) -> dict[str, Any]:
        if not knobs:
            return super().namespace(knobs, fill)
        key = (knobs, "fill", None if fill is None else fill_text(fill))
        if key not in self._compiled:
            if not self.fill:  # no fill to write: one variant whatever the fill
                key = (knobs, "fill", None)
                if key not in self._compiled:
                    self._compiled[key] = self._namespace(knobs, {}, False)
                return self._compiled[key]
            # the exercise's own fill text (float("-inf")) when no other is asked for
            value = float(fill) if fill is not None else eval(compile(self.fill, "<fill>", "eval", dont_inherit=True), {})
            self._compiled[key] = self._namespace(knobs, {FILL_NAME: value}, False)
        return self._compiled[key]

    def mask_filled(self, knobs: tuple[str, ...], fills) -> dict[str, Any]:
        """The top-level names of the reference with the edits of ``knobs``, each mask filled with
        its fill of ``fills`` (a ``variants.MaskFills``; compiled once per knob set, the fills are
        the namespace's)."""
        key = (knobs, "per mask", fills)
        if key not in self._compiled:
            self._compiled[key] = self._namespace(knobs, {"__mask_fill__": MaskFiller(list(self.sites), fills)}, True)
        return self._compiled[key]

    def forget(self) -> None:
        super().forget()
        self._code.clear()

"""A named mistake as data: an edit of the reference solution.

An exercise declares, in ``[grading] edits`` of its ``exercise.toml``, each of its mistake knobs as a
list of ``{old, new}`` text replacements of ``solutions/<id>.py``; the mistaken variant is the
reference with those edits made (two knobs at once: both lists, in order). Kinds that grade by
edits (``plain_module``, ``tensor_functions`` and the kinds built on them) share this one reader.
"""

from __future__ import annotations


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

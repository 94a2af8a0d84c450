"""Exercise kinds as plug-ins: one module per kind, each defining ``KIND`` (see :mod:`.base`).

An exercise names its kind in ``exercise.toml`` (``[contract] kind``); :func:`kind_for` imports the
module of that name from this package and builds its ``KIND`` for the exercise. Adding a kind is
adding a module here; adding an exercise of an existing kind is a folder under ``exercises/`` and a
module under ``solutions/``, with no code change.
"""

from __future__ import annotations

import importlib
import re

from attnprep.grader.kinds.base import Kind


class UnknownKind(LookupError):
    pass


def kind_class(exercise) -> type[Kind]:
    """The class of the exercise's kind (its declarations, :attr:`Kind.traits` …), not built."""
    name = exercise.contract.kind
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name or ""):
        raise UnknownKind(name)
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        raise UnknownKind(name) from exc
    return module.KIND


def kind_for(exercise, seed: int = 0) -> Kind:
    """The exercise's kind, built (its ``[grading]`` parsed: a :class:`~.base.GradingError` when the
    table does not fit the kind)."""
    return kind_class(exercise)(exercise, seed)

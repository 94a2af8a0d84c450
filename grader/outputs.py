"""The reference's and the mistaken variants' outputs on the cases, kept for the grading process.

Grading attempts of one exercise one after another (a drill, ``check`` on a folder, a test session)
computes the same things for each of them: the reference's outputs on every case, and, for a
failing attempt, the outputs of the mistaken variants the judge tries (hundreds, each compiled and
run). These depend only on the exercise's data (its contract, ``[grading]`` table and reference
solution), the seed, and the variant asked for: the cases are drawn from the seed, the variants'
weights are the seeded ones, never the attempt's. So they are computed once per process and read
back for every later attempt of the same exercise.

Off unless :func:`keep` turns it on: a grading child is forked from this process, and an attempt
can walk its inherited heap (``gc.get_objects()``) to the reference's outputs on the very cases it
is graded on, and return them. A process whose attempts are not a learner's (attnprep's own test
suite, which grades its corpus thousands of times) turns it on; ``check``, the drill and the
notebook never do.

What is kept is shared: read it, never change it (the judge compares, it does not write). At most
:data:`EXERCISES_KEPT` exercises' tables are kept (the least recently graded goes first), each of
at most :data:`ENTRIES_KEPT` outputs (then it starts again).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Callable

# every exercise's: a table is about 1 MiB (over a quarter of their corpus: mla 1,026 outputs, flash
# 810, mla_decode 274), and a test session's files come back to an exercise after the others
EXERCISES_KEPT = 32
ENTRIES_KEPT = 20000
_TABLES: OrderedDict[tuple, dict[tuple, Any]] = OrderedDict()
_keeping = False


def keep(on: bool = True) -> None:
    """Keep outputs from now on (``on``), or stop keeping them and drop what was kept."""
    global _keeping
    _keeping = on
    if not on:
        forget()


def keeping() -> bool:
    return _keeping


def _fingerprint(exercise, kind) -> tuple:
    """What the outputs of ``kind`` (built for ``exercise``) depend on besides the variant and the
    case: the kind's code, the exercise's contract and grading data, its reference's text, the seed."""
    try:
        solution = exercise.solution_path.read_bytes()
    except OSError:
        solution = b""
    data = repr((exercise.contract, exercise.grading)).encode("utf-8", errors="replace")
    digest = hashlib.sha256(data + b"\0" + solution).hexdigest()
    cls = type(kind)
    return cls, cls.reference, cls.variant, exercise.id, kind.seed, digest


class Outputs:
    """The kept outputs of one exercise's kind (see the module)."""

    def __init__(self, exercise, kind):
        self._table: dict[tuple, Any] | None = None
        if not _keeping:
            return  # computed every time
        key = _fingerprint(exercise, kind)
        table = _TABLES.pop(key, None)
        if table is None:
            table = {}
            while len(_TABLES) >= EXERCISES_KEPT:
                _TABLES.popitem(last=False)
        _TABLES[key] = table  # the most recently used last
        self._table = table

    def reference(self, ci: int, zero_bias: frozenset, case, compute: Callable[[], Any]) -> Any:
        """The reference's outputs on ``case`` of config ``ci``: ``compute()`` the first time."""
        return self._get(("reference", ci, zero_bias, case.name), compute)

    def variant(self, ci: int, zero_bias: frozenset, knob, fill, case, compute: Callable[[], Any]) -> Any:
        """The variant ``knob`` with ``fill``'s outputs on ``case``: ``compute()`` the first time.
        (An output mapping a kind makes as it is read, a script's calls one by one, is kept as it
        is: what was made of it stays made.)"""
        return self._get(("variant", ci, zero_bias, type(knob), knob, type(fill), fill, case.name), compute)

    def observed(self, zero_bias: frozenset, case, compute: Callable[[], Any]) -> Any:
        """The reference's outputs on the observed ``case`` of config 0 and what an ``Observer`` saw
        of that run (``judge.Judge._observed``): ``compute()`` the first time."""
        return self._get(("observed", 0, zero_bias, case.name), compute)

    def pictured(self, zero_bias: frozenset, case, compute: Callable[[], Any]) -> Any:
        """What an ``Observer`` saw of the reference on ``case`` of config 0, a case the heat-map
        may show (``judge.Judge._heatmap``): ``compute()`` the first time."""
        return self._get(("pictured", 0, zero_bias, case.name), compute)

    def trail(self, ci: int, zero_bias: frozenset, case, compute: Callable[[], Any]) -> Any:
        """The reference traced on ``case`` of config ``ci`` (its steps, marks and the steps of its
        outputs, see ``engine._trails``): ``compute()`` the first time."""
        return self._get(("trail", ci, zero_bias, case.name), compute)

    def _get(self, key: tuple, compute: Callable[[], Any]) -> Any:
        table = self._table
        if table is None:
            return compute()
        if key in table:
            return table[key]
        value = compute()  # an exception is not kept: the next attempt computes it again
        if len(table) >= ENTRIES_KEPT:
            table.clear()
        table[key] = value
        return value


# what a divergence Matcher worked out of one reference trail (see ``divergence.Matcher``), keyed by
# that trail's content: the same case of the same exercise is traced again for every failing attempt
MATCHERS_KEPT = 64
_MATCHERS: OrderedDict[tuple, dict] = OrderedDict()


def matcher_state(key: tuple) -> dict | None:
    """The kept state of the Matcher of the reference trail ``key`` (a new empty one the first
    time), or None when not keeping: the Matcher fills it in as it answers."""
    if not _keeping:
        return None
    state = _MATCHERS.pop(key, None)
    if state is None:
        state = {}
        while len(_MATCHERS) >= MATCHERS_KEPT:
            _MATCHERS.popitem(last=False)
    _MATCHERS[key] = state  # the most recently used last
    return state


# a variant's output as the judge compares it (see ``judge.Judge._diagnose``), by the output's id
SIDES_KEPT = 20000
_SIDES: dict[tuple, tuple] = {}


def sides() -> dict[tuple, tuple]:
    """The judge's kept table of variants' sides (emptied when full)."""
    if len(_SIDES) >= SIDES_KEPT:
        _SIDES.clear()
    return _SIDES


def forget() -> None:
    """Drop every kept output."""
    _TABLES.clear()
    _MATCHERS.clear()
    _SIDES.clear()

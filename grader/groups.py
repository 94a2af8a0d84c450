"""A mistake confined to a group of cases, told by the lines only that group runs.

When some cases of an attempt fail and others pass, the grading process asks the trace child to
run a few of each again under ``sys.settrace`` (:func:`.child.lines_run`) and to send back the
lines of the attempt's file each ran, in the order they first ran. A line that every failing case
runs and no passing case does (the ``else`` of ``if attention_mask is None``, the entry of a mask
table for padded *and* causal inputs, the ``case`` of a slope rule for a head count that is not a
power of two) is where the group of failing cases parts from the rest: when the divergence finder
blames a line the passing cases run too, and such a line ran before it, that line is said instead
(reason ``group``). Spectrum-based fault localisation, in its simplest exact form: no score, only
lines that separate the two groups exactly.

Nothing here names an exercise; it reads line numbers only.
"""

from __future__ import annotations

import re
from dataclasses import replace

from attnprep.grader.found import Found, assigned

MAX_FAILING = 3  # failing cases run again (the traced one first)
MAX_PASSING = 6  # passing cases run again, the traced config's first
COMPOUND = re.compile(r"(if|elif|else|for|while|match|case|with|try|except|finally|def|class|async)\b")


def runs_to_cover(failing: list[tuple[int, int]], ran: list[tuple[int, int]],
                  traced: tuple[int, int]) -> tuple[list[tuple[int, int]], int]:
    """The (config, case) pairs to run again: the traced failing case, two more failing ones, and
    up to :data:`MAX_PASSING` passing ones (the traced config's first); and how many of them fail
    (they come first). Empty when no case passes (the whole attempt is wrong: nothing to tell
    apart) or none fails."""
    bad = set(failing)
    passing = [p for p in ran if p not in bad]
    if not passing or not bad:
        return [], 0
    others = [f for f in failing if f != traced][:MAX_FAILING - 1]
    passing.sort(key=lambda p: p[0] != traced[0])
    return [traced, *others, *passing[:MAX_PASSING]], 1 + len(others)


def group_line(found: Found, lines: list, n_failing: int, statements: dict[int, tuple[int, str]], line_text,
               callers: frozenset[int] = frozenset()) -> Found:
    """``found``, or the line that the failing cases run and the passing ones mostly do not (see
    the module's doc). ``lines``: per run of :func:`runs_to_cover`, the lines it ran in first-run
    order (None when it raised); the first ``n_failing`` are the failing runs; ``statements``: a
    line -> (its statement's first line, the statement's code); ``line_text``: a line -> its text;
    ``callers``: the lines that called the function the blamed line is in (never said instead of it)."""
    if n_failing < 1 or len(lines) <= n_failing or any(not isinstance(r, list) for r in lines):
        return found
    runs = [[x for x in r if isinstance(x, int)] for r in lines]
    failing, passing = [set(r) for r in runs[:n_failing]], [set(r) for r in runs[n_failing:]]
    score = {line: _ochiai(line, failing, passing) for line in set().union(*failing)}
    first = lambda line: statements.get(line, (line, ""))[0]  # noqa: E731 — a statement over several lines is its first
    here = first(found.line)
    span = [line for line in score if first(line) == here]  # the physical lines of the blamed statement
    floor = score.get(here, min(score.values()))
    inside = [line for line in span if line != here]  # the lambdas of a table, the branches of a match
    if inside:
        top = max(score[line] for line in inside)
        if top >= STRONG and top - floor >= MARGIN:
            return _said(found, min(line for line in inside if score[line] == top), statements, line_text, alone=True)
    if found.reason not in PLACES:
        return found
    order = runs[0]
    at = next((i for i, line in enumerate(order) if first(line) == here), None)
    if at is None:
        return found
    own = max((score[line] for line in span), default=0.0)
    before = [line for line in order[:at] if first(line) != here and first(line) not in callers and line not in callers]
    if not before:
        return found
    top = max(score[line] for line in before)
    if top < STRONG or top - own < MARGIN:
        return found
    line = [line for line in before if score[line] == top][-1]
    if abs(first(line) - here) <= 1:
        return found
    return _said(found, line, statements, line_text)


PLACES = frozenset({"skipped", "made", "guarded", "incomplete"})  # the finder's reasons that say where a value
# goes wrong, not which operation is wrong: a step missing after the line, a value made without the
# inputs, a step a condition left out; on "values", "scalar", "input" … its line is the cause itself
STRONG = 0.8  # a line this close to "every failing case runs it, no passing case does" parts the groups
MARGIN = 0.2  # ... and clearly more so than the blamed line


def _ochiai(line: int, failing: list[set], passing: list[set]) -> float:
    """How strongly running ``line`` goes with failing: failing runs with it over the square root of
    (all failing runs × all runs with it); 1 when every failing run and no passing run has it."""
    f = sum(line in r for r in failing)
    p = sum(line in r for r in passing)
    return f / ((len(failing) * (f + p)) ** 0.5) if f else 0.0


def _said(found: Found, line: int, statements: dict[int, tuple[int, str]], line_text, alone: bool = False) -> Found:
    """``found`` moved to ``line``: its statement when that is a simple one written over several
    lines, else (or ``alone``: a line inside the blamed statement) the line itself (a branch of an
    ``if`` or ``match``, a lambda of a table)."""
    first, code = statements.get(line, (line, ""))
    if alone or not code or COMPOUND.match(code) or "lambda" in code:
        first, code = line, line_text(line).rstrip(",")
    if not code:
        return found
    return replace(found, line=first, code=code, name=assigned(code), shape=(), named="", reason="group",
                   ref_name="", ref_named="", ref_code=found.code)

"""A mistake confined to a group of cases, told by the lines only that group runs.

When some cases of an attempt fail and others pass, the grading process asks the trace child to
run a few of each again under ``sys.settrace`` (:func:`.child.lines_run`) and to send back the
lines of the attempt's file each ran, in the order they first ran. A line that every failing case
runs and no passing case does (the ``else`` of ``if attention_mask is None``, the entry of a mask
table for padded *and* causal inputs, the ``case`` of a slope rule for a head count that is not a
power of two; one passing run in four may run it too: padding that pads nothing) is where the
group of failing cases parts from the rest. Spectrum-based fault localisation in its simplest
exact form, bounded by what the divergence finder already knows:

- inside the statement the finder blames, when it spans several lines (a table of lambdas), the
  line the failing cases run is said;
- before the finder's line, the last such line that ran is said instead of it only when the
  finder's reason says *where* a value goes wrong rather than *which operation* is wrong (a stage
  skipped after the line, a value made without the inputs, a step a condition left out), never a
  condition (``if``, ``for``, ``case``: the branch is said by its body), nor a line that calls the
  function the blamed line is in. A mask prepared right in a branch and dropped later (``beta=0``)
  keeps its line: the finder's line is the wrong operation there.

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
    spare = (len(passing) - 1) // 4  # passing runs a parting line may have (an input that pads nothing)
    parts = {line for line in set.intersection(*failing) if sum(line in r for r in passing) <= spare}
    first = lambda line: statements.get(line, (line, ""))[0]  # noqa: E731 — a statement over several lines is its first
    here = first(found.line)
    if not parts or here in parts or found.line in parts:
        return found
    inside = sorted(line for line in parts if first(line) == here)  # a lambda of a table, a branch of a match
    if inside:
        return _said(found, inside[0], statements, line_text, alone=True)
    if found.reason not in PLACES:
        return found
    order = runs[0]
    at = next((i for i, line in enumerate(order) if first(line) == here), None)
    if at is None:
        return found
    before = [line for line in order[:at] if line in parts and first(line) not in callers and line not in callers
              and not COMPOUND.match(line_text(line))]
    if not before:
        return found
    return _said(found, before[-1], statements, line_text)


PLACES = frozenset({"skipped", "made", "guarded", "incomplete"})  # the finder's reasons that say where a value
# goes wrong, not which operation is wrong: a step missing after the line, a value made without the
# inputs, a step a condition left out; on "values", "scalar", "input" … its line is the cause itself


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

"""grader/outputs.py: the reference's and the variants' outputs kept across grades (the test suite
turns it on, tests/conftest.py) give the very result a grade computing everything gives, and
nothing outside the test suite turns it on."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnprep import exercises
from attnprep.grader import grade, outputs
from per_exercise import exercises_of, first_failing

CORPUS = Path(__file__).parent / "corpus"


def _without_time(result) -> str:
    """The result as text, its time left out (a heat-map may hold NaN, which no float equals)."""
    return repr(dataclasses.replace(result, duration_s=0.0))


# failing attempts of kinds that search variants differently (an edited module with a fill per mask,
# a script of cached calls made as it is read, a blocked loop, functions with a fill per call): the
# first exercise of each kind and its first failing corpus attempt; and a passing one
KINDS = ("attention_module", "cached_module", "blocked_attention", "sdpa_functions")
FIRST = [exercises_of(kind)[0].id for kind in KINDS]


def _a_mask_mistake(exercise_id: str) -> str:
    """The exercise's first corpus attempt whose header names one mask mistake (the judge also tries
    its fills per mask), else its first failing one."""
    ex = exercises.get(exercise_id)
    for path in sorted((CORPUS / exercise_id).glob("*.py")):
        said = re.search(r"^# diagnosis: (\w+)\s*$", path.read_text(encoding="utf-8"), re.M)
        if said and said.group(1) in {m.id for m in ex.mistakes} and ex.mistake(said.group(1)).mask:
            return path.name
    return first_failing(exercise_id)


ATTEMPTS = [(ex_id, _a_mask_mistake(ex_id)) for ex_id in FIRST] + [
    (FIRST[0], sorted(p.name for p in (CORPUS / FIRST[0]).glob("ok_*.py"))[0])]


@pytest.mark.parametrize("folder, name", ATTEMPTS, ids=lambda v: str(v).removesuffix(".py"))
def test_a_grade_with_kept_outputs_is_the_grade_that_computes_them(folder, name, tmp_path):
    """The same file graded with nothing kept, then twice with outputs kept (the second time every
    reference and variant output the judge reads is a kept one): three equal results."""
    path = CORPUS / folder / name
    was = outputs.keeping()
    try:
        outputs.keep(False)
        fresh = grade(path, timeout=30.0)
        outputs.keep(True)
        first = grade(path, timeout=30.0)
        table = next(reversed(outputs._TABLES.values()))
        kept = len(table)
        again = grade(path, timeout=30.0)
        assert len(table) == kept > 0  # read back, nothing computed anew
    finally:
        outputs.keep(False)
        outputs.keep(was)
    assert _without_time(first) == _without_time(fresh)
    assert _without_time(again) == _without_time(fresh)


def test_outputs_are_not_kept_unless_asked():
    """A grading child inherits the grading process's memory: kept outputs would be within an
    attempt's reach (gc.get_objects()), so attnprep itself never keeps them: off when imported, and
    no module of attnprep but the tests' conftest turns them on."""
    code = "from attnprep.grader import outputs; print(outputs.keeping())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == ["False"], proc.stderr
    root = Path(outputs.__file__).resolve().parent.parent
    sources = [p for folder in ("attnprep", "grader") for p in (root / folder).rglob("*.py")]
    assert len(sources) > 20
    turning_on = [p.name for p in sources if ".keep(" in p.read_text(encoding="utf-8")]
    assert turning_on == [], turning_on


def test_a_divergence_read_from_a_kept_matcher_is_the_one_worked_out_afresh():
    """A failing attempt graded again with outputs kept finds its divergence with the Matcher state
    of the first grade (the same reference trail: its answers read back, none worked out again),
    and says what a grade keeping nothing says; forget() drops that state too."""
    path = CORPUS / "flash" / "missing_scale.py"
    was = outputs.keeping()
    try:
        outputs.keep(False)
        fresh = grade(path, timeout=30.0)
        outputs.keep(True)
        first = grade(path, timeout=30.0)
        assert len(outputs._MATCHERS) >= 1
        state = next(reversed(outputs._MATCHERS.values()))
        answers = dict(state["_answers"])
        assert answers  # the first grade's questions, answered
        again = grade(path, timeout=30.0)
        assert state is next(reversed(outputs._MATCHERS.values())) and state["_answers"] == answers
        assert outputs._SIDES  # the variants' sides the judge compared, kept too
    finally:
        outputs.keep(False)
        outputs.keep(was)
    assert not outputs._MATCHERS and not outputs._SIDES
    assert fresh.divergence is not None
    assert _without_time(first) == _without_time(fresh)
    assert _without_time(again) == _without_time(fresh)

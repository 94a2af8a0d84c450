"""`attnprep debug` (issue 29): a complete implementation with named mistakes planted, to fix.

The material is exercises/<id>/plants.toml (generated and verified by benchmarks/plants.py); the
round is attnprep/debugging.py; the clock is the drill's loop.
"""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from attnprep import debugging, exercises, history
from attnprep.app import app

EXERCISES = list(exercises.registry())


def cli(*args: str, **kw):
    lang = [] if args[0] == "--lang" else ["--lang", "en"]
    return CliRunner().invoke(app, [*lang, *args], catch_exceptions=False, **kw)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_every_exercise_has_plants_that_fit_its_reference(exercise_id):
    ex = exercises.get(exercise_id)
    singles, pairs = debugging.load_plants(ex)
    assert singles, f"no plants: run python benchmarks/plants.py --exercise {exercise_id}"
    base = debugging.canonical(ex.solution_path.read_text(encoding="utf-8")).split("\n")
    listed = {m.id for m in ex.mistakes}
    for p in singles:
        for n, old, new in zip(p.lines, p.old, p.new):
            assert base[n - 1] == old, f"{exercise_id}: plants.toml is stale at line {n}"
            assert new != old
        assert p.mistake in listed
    for a, b in pairs:
        assert singles[a].mistake != singles[b].mistake


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_a_planted_file_is_failed_with_each_planted_mistake_named_and_passes_once_undone(exercise_id, tmp_path, graded):
    """Graded without the divergence (``divergence=False``: no line looked for, no trace child; the
    verdict and the mistakes named are the same): the test reads no line."""
    ex = exercises.get(exercise_id)
    round_ = debugging.plant(ex, seed=11)
    assert len(round_.planted) == debugging.default_bugs(ex) or not debugging.load_plants(ex)[1]
    path = tmp_path / f"{exercise_id}-debug.py"
    path.write_text(round_.source, encoding="utf-8")
    result = graded(path, exercise_id, divergence=False)
    assert not result.passed
    assert sorted(d.id for d in result.diagnoses) == sorted(p.mistake for p in round_.planted), result.diagnoses
    lines = round_.source.split("\n")
    for p in round_.planted:
        assert [lines[n - 1].strip() for n in p.lines] == p.code.split("\n")  # the reveal's lines are the file's
    fixed = tmp_path / f"{exercise_id}-fixed.py"
    fixed.write_text(debugging.undo(round_.source, round_.planted), encoding="utf-8")
    assert graded(fixed, exercise_id, divergence=False).passed


def test_the_file_is_not_the_solutions_text_and_seeds_differ():
    ex = exercises.get("mqa")
    solution = ex.solution_path.read_text(encoding="utf-8")
    rounds = [debugging.plant(ex, seed) for seed in range(12)]
    assert all(r.source not in solution and "class MultiQueryAttention" in r.source for r in rounds)
    assert len({r.source for r in rounds}) >= 6
    assert len({tuple(p.mistake for p in r.planted) for r in rounds}) >= 4
    assert debugging.plant(ex, 3) == debugging.plant(ex, 3)  # a seed is reproducible
    renamed = [r for r in rounds if "scores" not in r.source.split("# every save")[-1]]
    assert renamed, "the locals are never renamed"


def test_the_history_weights_the_mistakes_the_user_makes():
    ex = exercises.get("mha")
    singles, _ = debugging.load_plants(ex)
    target = singles[-1].mistake
    plain = sum(debugging.choose(ex, s, 1)[0].mistake == target for s in range(300))
    weighted = sum(debugging.choose(ex, s, 1, {target: 1.0})[0].mistake == target for s in range(300))
    assert weighted > 2 * max(plain, 1)


def test_restyle_keeps_parameters_attributes_keywords_and_globals():
    source = ("import torch\nN = 3\nclass A:\n    def mean(self, scale=1):\n        return 5 * scale\n"
              "def f(q, k):\n    scores = q * k\n    mean = scores * N\n    scale = 2\n"
              "    out = mean + A().mean(scale=scale)\n    return out\n")
    renamed = set()
    for seed in range(30):
        text, renames = debugging.restyle(source, random.Random(seed))
        renamed |= set(renames)
        assert set(renames) <= {"scores", "out", "mean"} and "def f(q, k):" in text and "N = 3" in text
        assert ".mean(scale=" in text and "def mean(self, scale=1)" in text  # attributes, keywords, defs keep theirs
        ns: dict = {}
        exec(compile(text.replace("import torch\n", ""), "x", "exec"), ns)
        assert ns["f"](2, 3) == 28
    assert "mean" in renamed  # the local of the same name was renamed, and only it


def test_write_reveal_and_json_list_exactly_what_was_planted(tmp_path):
    out = cli("debug", "mha", "--seed", "4", "--no-clock", "--dir", str(tmp_path))
    assert out.exit_code == 0, out.output
    written = list((tmp_path / "debug").glob("mha-*.py"))
    assert len(written) == 1
    again = cli("debug", "mha", "--seed", "4", "--no-clock", "--dir", str(tmp_path))
    assert again.exit_code == 0 and len(list((tmp_path / "debug").glob("mha-*.py"))) == 2  # never over a file
    expected = debugging.plant(exercises.get("mha"), 4)
    assert written[0].read_text(encoding="utf-8") == expected.source or \
        sorted(p.read_text(encoding="utf-8") for p in (tmp_path / "debug").glob("mha-*.py"))[0] == expected.source
    shown = cli("debug", "--reveal", str(written[0]), "--json")
    doc = json.loads(shown.stdout)
    assert doc["exercise"] == "mha" and doc["seed"] == 4
    assert [(m["id"], m["line"], m["code"]) for m in doc["mistakes"]] == [(p.mistake, p.line, p.code) for p in expected.planted]
    assert all(m["title"] and m["why"] and m["fix"] for m in doc["mistakes"])
    text = cli("--lang", "zh", "debug", "--reveal", str(written[0]))
    assert "埋下的错误" in text.stdout and expected.planted[0].mistake in text.stdout


def test_reveal_without_a_round_is_a_usage_error(tmp_path):
    out = CliRunner().invoke(app, ["debug", "--reveal"])
    assert out.exit_code == 2 and "attnprep debug" in out.output
    out = CliRunner().invoke(app, ["debug", "mha", "--json"])
    assert out.exit_code == 2


@pytest.mark.slow
def test_a_debug_round_runs_on_the_clock_and_is_counted_by_stats_and_today(tmp_path):
    out = cli("debug", "causal", "--seed", "2", "--seconds", "1", "--dir", str(tmp_path))
    assert out.exit_code == 1, out.output  # time is up with the planted mistake still there
    assert "planted in" in out.output
    rounds = history.debug_rounds()
    assert len(rounds) == 1 and rounds[0].outcome == "timeout" and rounds[0].found == 0
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["debug"]["rounds"] == 1 and stats["debug"]["bugs_planted"] == len(rounds[0].planted)
    assert stats["totals"]["drills"] == 0  # a debug round is not a drill
    today = json.loads(cli("today", "--json").stdout)
    assert today["debug_rounds"] == 1


@pytest.mark.slow
def test_an_interview_can_end_with_a_debug_round(tmp_path):
    answers = tmp_path / "answers.txt"
    answers.write_text("\n", encoding="utf-8")  # submit the stub at once: a first try that fails
    out = cli("interview", "causal", "--questions", "0", "--answers", str(answers), "--seconds", "1",
              "--dir", str(tmp_path), "--debug")
    assert out.exit_code == 1, out.output
    assert "debug round: causal again" in out.output and "planted in" in out.output
    rounds = history.debug_rounds()
    assert len(rounds) == 1 and rounds[0].exercise == "causal" and rounds[0].outcome == "timeout"
    assert list((tmp_path / "debug").glob("causal-*.py")) and list((tmp_path / "interviews").glob("causal-*.py"))

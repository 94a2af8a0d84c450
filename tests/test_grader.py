"""The grader against its corpus: every attempt's verdict and diagnosis, the references, the stubs.

Each file of tests/corpus/<exercise>/ states what the grader must say about it on its second and
third lines (``# expect: <verdict>``, ``# diagnosis: <mistake id>``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from attnprep import exercises
from attnprep.grader import grade
from attnprep.grader.result import Verdict

CORPUS = Path(__file__).parent / "corpus"
EXERCISES = list(exercises.registry())


def header(path: Path) -> tuple[str, str | None]:
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    expect = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# expect:"))
    diagnosis = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("# diagnosis:")), None)
    return expect, diagnosis


CORPUS_FILES = sorted(p for ex in EXERCISES for p in (CORPUS / ex).glob("*.py"))


def test_corpus_covers_every_exercise_and_mistake():
    for ex in exercises.registry().values():
        files = list((CORPUS / ex.id).glob("*.py"))
        correct = [f for f in files if header(f)[0] == "passed"]
        assert len(correct) >= 3, f"{ex.id}: fewer than 3 correct attempts"
        named = {header(f)[1] for f in files}
        missing = {m.id for m in ex.mistakes} - named
        assert not missing, f"{ex.id}: no attempt for {sorted(missing)}"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_attempt(path):
    expect, diagnosis = header(path)
    result = grade(path)
    assert not result.internal, result.error
    assert result.verdict.value == expect, (result.checks, result.diagnoses, result.error)
    ids = [d.id for d in result.diagnoses]
    if diagnosis:
        assert ids == [diagnosis]
    else:
        assert ids == []
    if expect == "passed":
        assert all(c.passed is not False for c in result.checks)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_reference_solution_passes(exercise_id, tmp_path):
    ex = exercises.get(exercise_id)
    copy = tmp_path / "attempt.py"
    shutil.copy(ex.solution_path, copy)
    result = grade(copy, exercise_id)
    assert result.verdict is Verdict.PASSED, (result.checks, result.diagnoses, result.error)
    assert result.mapping == {p.name: p.name for p in ex.contract.params}


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_blank_stub_fails_cleanly(exercise_id, tmp_path):
    ex = exercises.get(exercise_id)
    stub = tmp_path / ex.filename
    stub.write_text(exercises.render_stub(ex), encoding="utf-8")
    result = grade(stub)
    assert result.verdict is Verdict.ERROR
    assert not result.internal
    assert "NotImplementedError" in result.error.message
    assert f"attnprep hint {exercise_id}" in result.error.message
    assert ex.filename in result.error.traceback  # the user's own frame, ours trimmed
    assert "attnprep/grader" not in result.error.traceback


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_variants_without_mistake_equal_the_reference(exercise_id):
    """The functional re-implementation behind the diagnoses is itself the reference."""
    from attnprep.grader import variants
    from attnprep.grader.drivers import driver_for

    ex = exercises.get(exercise_id)
    driver = driver_for(ex, seed=3)
    for ci in range(len(driver.configs)):
        weights = driver.role_weights(ci) if driver.roles(ci) else {}
        plain = variants.make_call(exercise_id, driver.configs[ci], weights)
        reference = driver.reference(ci)
        for case in driver.cases(ci):
            got, want = plain(case), reference(case)
            where = case.graded.reshape(case.graded.shape + (1,) * (want.dim() - 2))
            if driver.token_axis == 2:
                where = case.graded[:, None, :, None]
            assert torch.allclose(torch.where(where, got, 0), torch.where(where, want, 0), atol=1e-5), (ci, case.name)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_every_variant_changes_the_output(exercise_id):
    """A knob that computes the reference could never be told apart: each must differ somewhere."""
    from attnprep.grader import variants
    from attnprep.grader.drivers import driver_for

    ex = exercises.get(exercise_id)
    driver = driver_for(ex, seed=0)
    for knob in variants.knobs(ex):
        differs = False
        for ci in range(len(driver.configs)):
            weights = driver.role_weights(ci) if driver.roles(ci) else {}
            call = variants.make_call(exercise_id, driver.configs[ci], weights, knob)
            reference = driver.reference(ci)
            for case in driver.cases(ci):
                got, want = call(case), reference(case)
                if got.shape != want.shape or not torch.allclose(got, want, atol=1e-4, equal_nan=False):
                    differs = True
                    break
            if differs:
                break
        assert differs, knob


def test_seed_changes_weights_but_not_verdicts(tmp_path):
    attempt = CORPUS / "mha" / "missing_scale.py"
    a, b = grade(attempt, seed=0), grade(attempt, seed=7)
    assert a.verdict == b.verdict == Verdict.WRONG_OUTPUT
    assert a.output_diff != b.output_diff
    assert [d.id for d in a.diagnoses] == [d.id for d in b.diagnoses] == ["missing_scale"]


@pytest.mark.parametrize(("attempt", "case", "leaking"), [
    ("ok_textbook", "padded+causal", False),
    ("causal_leaks_next", "padded+causal", True),
    ("padding_mask_ignored", "padded", True),  # right padding hides it from a causal picture
    ("padding_mask_on_queries", "padded", True),
])
def test_heatmap_shows_the_case_where_the_attempt_goes_wrong(attempt, case, leaking):
    from attnprep.report import leaks

    heatmap = grade(CORPUS / "mha" / f"{attempt}.py").heatmap
    assert heatmap is not None and heatmap.got is not None
    assert heatmap.title.split(", ")[2].split(" (")[0] == case
    assert heatmap.graded == [True] * 4 + [False] * 3  # sample 2: 4 real tokens of 7
    assert bool(leaks(heatmap)) is leaking
    assert all(i < 4 for i, _, _ in leaks(heatmap))


def test_mapping_by_shape_is_reported():
    result = grade(CORPUS / "mha" / "ok_einsum_own_names.py")
    assert result.passed
    assert set(result.mapping) == {"q_proj", "k_proj", "v_proj", "o_proj"}
    assert set(result.mapping.values()) != set(result.mapping)  # the user's names
    assert any("by shape" in note for note in result.mapping_notes)


def test_json_document(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401  (registers the commands)
    from attnprep.app import app

    shutil.copy(CORPUS / "gqa" / "gqa_heads_tiled.py", tmp_path / "gqa.py")
    shutil.copy(exercises.get("mha").solution_path, tmp_path / "mha.py")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == 1
    assert [r["exercise"] for r in doc["results"]] == ["mha", "gqa"]
    mha, gqa = doc["results"]
    assert mha["passed"] is True and mha["verdict"] == "passed"
    assert gqa["passed"] is False and gqa["verdict"] == "wrong output"
    for r in doc["results"]:
        assert set(r) >= {"exercise", "file", "passed", "verdict", "checks", "diagnoses", "mapping", "duration_s"}
        assert all(set(c) == {"name", "passed", "detail"} for c in r["checks"])
        assert r["duration_s"] > 0
    assert gqa["diagnoses"][0]["id"] == "gqa_heads_tiled"
    assert set(gqa["diagnoses"][0]) >= {"id", "title", "fix"}
    assert any(c["name"] == "output" and c["passed"] is False for c in gqa["checks"])


def test_check_exit_codes_and_usage_errors(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    empty = runner.invoke(app, ["check"])
    assert empty.exit_code == 2 and "no exercise files" in empty.output
    unknown = runner.invoke(app, ["check", "gqq"])
    assert unknown.exit_code == 2 and "did you mean" in unknown.output and "gqa" in unknown.output
    missing = runner.invoke(app, ["check", "mha"])
    assert missing.exit_code == 2 and "attnprep new mha" in missing.output
    nofile = runner.invoke(app, ["check", "nowhere/x.py"])
    assert nofile.exit_code == 2 and "no such file" in nofile.output
    (tmp_path / "mine.py").write_text("print('hi')\n")
    anonymous = runner.invoke(app, ["check", "mine.py"])
    assert anonymous.exit_code == 2 and "-e ID" in anonymous.output
    shutil.copy(exercises.get("mqa").solution_path, tmp_path / "mine.py")
    ok = runner.invoke(app, ["check", "mine.py", "-e", "mqa"])
    assert ok.exit_code == 0, ok.output
    assert "passed" in ok.output
    for result in (empty, unknown, missing, nofile, anonymous):
        assert "Traceback" not in result.output


def test_check_records_history(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep import history
    from attnprep.app import app

    shutil.copy(CORPUS / "mha" / "missing_scale.py", tmp_path / "mha.py")
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(app, ["check", "mha"])
    runs = history.runs("mha")
    assert len(runs) == 1
    assert runs[0].verdict == "wrong output" and not runs[0].passed
    assert "missing_scale" in runs[0].diagnoses


def test_demo_shows_the_named_mistake():
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "GQA heads tiled" in result.output
    assert "repeat_interleave" in result.output
    assert "wrong output" in result.output

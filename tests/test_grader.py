"""The grader against its corpus: every attempt's verdict and diagnosis, the references, the stubs.

Each file of tests/corpus/<exercise>/ states what the grader must say about it on its second and
third lines (``# expect: <verdict>``, ``# diagnosis: <mistake id>``, or ``<id> + <id>`` for two
mistakes named together).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from attnprep import exercises, texts
from attnprep.grader import engine, grade
from attnprep.grader.result import Verdict
from per_exercise import PURPOSES, examples, rows

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


def test_every_examples_file_names_attempts_of_its_corpus():
    """tests/corpus/<id>/examples.toml (read by tests/per_exercise.py) is beside a registered
    exercise's corpus, its top-level keys are purposes the shared tests know, and every attempt it
    names is a file of that corpus."""
    files = sorted(CORPUS.glob("*/examples.toml"))
    assert files
    for path in files:
        exercise_id = path.parent.name
        assert exercise_id in exercises.registry(), path
        data = examples(exercise_id)
        purposes = {key: value for key, value in data.items() if not isinstance(value, dict)}
        assert set(purposes) <= PURPOSES, path
        named = list(purposes.values()) + [name for table in data.values() if isinstance(table, dict) for name in table]
        for name in named:
            assert (path.parent / name).is_file(), f"{path}: no attempt {name}"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_attempt(path, graded):
    expect, diagnosis = header(path)
    result = graded(path)
    assert not result.internal, result.error
    assert result.verdict.value == expect, (result.checks, result.diagnoses, result.error)
    ids = [d.id for d in result.diagnoses]
    if diagnosis:  # one mistake id, or two named together: "a + b"
        assert sorted(ids) == sorted(diagnosis.split(" + "))
    else:
        assert ids == []
    if expect == "passed":
        assert all(c.passed is not False for c in result.checks)
        # a correct attempt in another layout is not a shapes mismatch
        assert all(row.ok for row in result.shapes), [r for r in result.shapes if not r.ok]
        assert result.divergence is None
    elif expect in ("wrong_output", "mask_leak", "wrong_shape"):
        # every failing attempt gets a named mistake or a line where it first goes wrong
        assert result.diagnoses or result.divergence is not None, result.checks
    if result.divergence is not None:  # the line is the attempt's own, as it reads
        lines = path.read_text(encoding="utf-8").splitlines()
        line, code = result.divergence.line, result.divergence.code
        first, statement = engine._statements(path).get(line, (line, None))
        if statement is None:
            assert lines[line - 1].strip() == code
        elif first != line:  # an entry of a table of lambdas: its own line (a parting line, or the lambda
            # a wrong value was made in: then one of the statement's lambdas holds it), or an argument
            # written on its own line of a call over several lines (the tensor a register_buffer is given)
            spans = engine._lambda_spans(path.read_text(encoding="utf-8")).get(first, ())
            # or the entry of a document (a line of a string over several lines) or of a table the file
            # chooses a value in (literal_setting)
            assert result.divergence.reason in ("group", "literal_setting") or any(a <= line <= b for a, b in spans) \
                or line in _argument_lines(path, first) | _entry_lines(path, first), (line, first)
            assert lines[line - 1].strip().rstrip(",") == code
        else:  # a statement written over several lines: its first line, the statement on one line
            bare = lambda text: "".join(text.split("#")[0].split())  # noqa: E731
            assert first == line and code == statement[:200] and bare(code).startswith(bare(lines[line - 1]))


def _argument_lines(path: Path, first: int) -> set[int]:
    """The first lines of the arguments of the calls in the simple statement that starts on line ``first``."""
    import ast

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.stmt) and node.lineno == first and not hasattr(node, "body"):
            return {a.lineno for call in ast.walk(node) if isinstance(call, ast.Call)
                    for a in [*call.args, *(k.value for k in call.keywords)]}
    return set()


def _entry_lines(path: Path, first: int) -> set[int]:
    """The lines of the entries of the dict displays in the statement that starts on line ``first``
    (a table of functions written one entry a line: the entry said where the wrong one is chosen)."""
    import ast

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.stmt) and node.lineno == first and not hasattr(node, "body"):
            return {v.lineno for d in ast.walk(node) if isinstance(d, ast.Dict) for v in d.values}
    return set()


def test_a_cached_grade_is_a_fresh_grade(graded):
    """``graded`` (tests/conftest.py) grades a file once per session; what it hands out is what a
    fresh grade says: a pass, a named mistake with its divergence, and an error, graded again here,
    equal their cached results in everything but the time taken (a script of calls' error:
    the cached kind's own test module)."""
    for path in (CORPUS / "mha" / "ok_textbook.py", CORPUS / "gqa" / "gqa_heads_tiled.py",
                 CORPUS / "gqa" / "tensor_without_device.py"):
        assert_cached_is_fresh(graded, path)
    assert graded(CORPUS / "mha" / "missing_scale.py", seed=7) is not graded(CORPUS / "mha" / "missing_scale.py")
    assert graded(CORPUS / "mha" / "missing_scale.py", "mha") is graded(CORPUS / "mha" / "missing_scale.py")  # the id it finds


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
    assert result.verdict is Verdict.ERROR and result.blank
    assert not result.internal
    words = texts.render(result.error.message)
    assert "nothing written yet" in words and f"attnprep hint {exercise_id}" in words
    # Once edited, the stub's NotImplementedError is an error in the user's own file and line.
    stub.write_text(exercises.render_stub(ex) + "\n# started\n", encoding="utf-8")
    result = grade(stub)
    assert result.verdict is Verdict.ERROR and not result.blank
    assert "NotImplementedError" in texts.render(result.error.message)
    assert ex.filename in result.error.traceback  # the user's own frame, ours trimmed
    assert "attnprep/grader" not in result.error.traceback


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_variants_without_mistake_equal_the_reference(exercise_id):
    """The functional re-implementation behind the diagnoses is itself the reference."""
    from attnprep.grader.kinds import kind_for

    kind = kind_for(exercises.get(exercise_id), seed=3)
    for ci in range(len(kind.configs)):
        plain = kind.variant(ci, frozenset(), "", float("-inf"))
        reference = kind.reference(ci)
        for case in kind.cases(ci):
            got_all, want_all = plain(case), reference(case)
            assert set(got_all) == set(want_all)
            for name, want in want_all.items():
                got, where = got_all[name].double(), case.mask(name, tuple(want.shape))
                rtol, atol = case.tolerance or (0.0, 1e-5)  # a low precision: rounded to it, a few ulps
                assert torch.allclose(torch.where(where, got, 0), torch.where(where, want.double(), 0), rtol=rtol,
                                      atol=atol), (ci, case.name)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_every_variant_changes_the_output(exercise_id):
    """A knob that computes the reference could never be told apart: each must differ somewhere."""
    from attnprep.grader.kinds import kind_for

    kind = kind_for(exercises.get(exercise_id), seed=0)
    for knob in kind.knobs():
        differs = False
        for ci in range(len(kind.configs)):
            call = kind.variant(ci, frozenset(), knob, float("-inf"))
            reference = kind.reference(ci)
            for case in kind.cases(ci):
                want_all = reference(case)
                try:
                    got_all = call(case)
                except (RuntimeError, IndexError):  # a tensor op of the variant raises where the reference runs
                    differs = True
                    break
                for name, want in want_all.items():
                    got = got_all[name]
                    if got.shape != want.shape or not torch.allclose(got.double(), want.double(), atol=1e-4, equal_nan=False):
                        differs = True
                        break
                if differs:
                    break
            if differs:
                break
        assert differs, knob


def assert_cached_is_fresh(graded, path: Path) -> None:
    from dataclasses import replace

    cached = graded(path)
    assert graded(path) is cached
    fresh = grade(path)
    assert fresh is not cached
    assert replace(fresh, duration_s=0.0) == replace(cached, duration_s=0.0), path


def test_seed_changes_weights_but_not_verdicts(tmp_path, graded):
    attempt = CORPUS / "mha" / "missing_scale.py"
    a, b = graded(attempt, seed=0), graded(attempt, seed=7)
    assert a.verdict == b.verdict == Verdict.WRONG_OUTPUT
    assert a.output_diff != b.output_diff
    assert [d.id for d in a.diagnoses] == [d.id for d in b.diagnoses] == ["missing_scale"]


def test_a_default_dtype_the_attempts_file_sets_is_put_back_after_its_import(tmp_path):
    """``torch.set_default_dtype(torch.float64)`` at the top of a correct attempt (okfit18) made the
    child's seeded weights and inputs float64 draws, other numbers than the reference's: 48 of 48
    outputs wrong. The grader's tensors stay float32; a buggy twin still fails, named."""
    source = (CORPUS / "mha" / "ok_set_default_dtype_float64_module.py").read_text(encoding="utf-8")
    attempt = tmp_path / "mha.py"
    attempt.write_text(source, encoding="utf-8")
    assert grade(attempt, protect=()).passed
    attempt.write_text(source.replace(" / math.sqrt(D)", ""), encoding="utf-8")
    result = grade(attempt, protect=())
    assert not result.passed and [d.id for d in result.diagnoses] == ["missing_scale"]


@pytest.mark.parametrize(("attempt", "case", "leaking"), [
    ("ok_textbook", "padded+causal", False),
    ("causal_leaks_next", "padded+causal", True),
    ("padding_mask_ignored", "padded", True),  # right padding hides it from a causal picture
    ("padding_mask_on_queries", "padded", True),
])
def test_heatmap_shows_the_case_where_the_attempt_goes_wrong(attempt, case, leaking, graded):
    from attnprep.report import leaks

    heatmap = graded(CORPUS / "mha" / f"{attempt}.py").heatmap
    assert heatmap is not None and heatmap.got is not None
    assert heatmap.case == case
    assert heatmap.graded == [True] * 4 + [False] * 3  # sample 2: 4 real tokens of 7
    assert bool(leaks(heatmap)) is leaking
    assert all(i < 4 for i, _, _ in leaks(heatmap))


def test_mapping_by_shape_is_reported(graded):
    result = graded(CORPUS / "mha" / "ok_einsum_own_names.py")
    assert result.passed
    assert set(result.mapping) == {"q_proj", "k_proj", "v_proj", "o_proj"}
    assert set(result.mapping.values()) != set(result.mapping)  # the user's names
    assert any(note.kind == "by_shape" for note in result.mapping_notes)


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
    assert doc["version"] == 2
    assert [r["exercise"] for r in doc["results"]] == ["mha", "gqa"]
    mha, gqa = doc["results"]
    assert mha["passed"] is True and mha["verdict"] == "passed"
    assert gqa["passed"] is False and gqa["verdict"] == "wrong_output" and gqa["label"] == "wrong output"
    for r in doc["results"]:
        assert set(r) >= {"exercise", "file", "passed", "verdict", "label", "checks", "diagnoses", "divergence",
                          "stdout", "mapping", "duration_s"}
        assert all(set(c) == {"id", "passed", "detail"} for c in r["checks"])
        assert r["duration_s"] > 0
    assert gqa["diagnoses"][0]["id"] == "gqa_heads_tiled"
    assert set(gqa["diagnoses"][0]) == {"id", "title", "why", "fix", "evidence"}
    assert gqa["diagnoses"][0]["title"] == exercises.get("gqa").mistake("gqa_heads_tiled").title
    assert any(c["id"] == "output" and c["passed"] is False and "differ" in c["detail"] for c in gqa["checks"])


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
    shutil.copy(exercises.get("gqa").solution_path, tmp_path / "mine.py")
    ok = runner.invoke(app, ["check", "mine.py", "-e", "gqa"])
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
    assert runs[0].verdict == "wrong_output" and not runs[0].passed
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


def test_an_exercise_of_an_existing_kind_is_data_and_a_solution(tmp_path, monkeypatch):
    """A new exercise of an existing kind needs a folder under exercises/ and a module under
    solutions/, no code: a copy of gqa under a new id is graded like gqa. The folder is added to a
    copy of exercises/ (``exercises.HERE`` pointed at it): a folder added to the checkout itself is
    seen by every other test that lists the exercises meanwhile (bash completion in another worker
    once offered it). The solution goes beside the others, where the grader knows reference code."""
    new_id = "zz_copy_of_gqa"
    source = exercises.get("gqa")
    bank = tmp_path / "exercises"
    shutil.copytree(exercises.HERE, bank, ignore=shutil.ignore_patterns("__pycache__"))
    solution = exercises.SOLUTIONS_DIR / f"{new_id}.py"
    try:
        monkeypatch.setattr(exercises, "HERE", bank)
        shutil.copytree(source.folder, bank / new_id)
        shutil.copy(source.solution_path, solution)
        exercises.registry.cache_clear()
        ex = exercises.get(new_id)
        assert ex.folder == bank / new_id and ex.contract.kind == source.contract.kind
        attempt = tmp_path / "attempt.py"
        shutil.copy(solution, attempt)
        passed = grade(attempt, ex)
        assert passed.verdict is Verdict.PASSED, (passed.checks, passed.error)
        stub = tmp_path / "stub.py"
        stub.write_text(exercises.render_stub(ex), encoding="utf-8")
        assert grade(stub, ex).verdict is Verdict.ERROR
        tiled = grade(CORPUS / "gqa" / "gqa_heads_tiled.py", new_id)
        assert tiled.exercise == new_id and [d.id for d in tiled.diagnoses] == ["gqa_heads_tiled"]
    finally:
        solution.unlink(missing_ok=True)
        monkeypatch.undo()
        exercises.registry.cache_clear()


def test_no_exercise_id_is_spelled_in_engine_or_shell_code():
    """Exercise specifics live in exercises/<id>/ as data: no string literal in grader/ or
    attnprep/ code is an exercise id."""
    import io
    import tokenize

    root = Path(__file__).parent.parent
    ids = set(exercises.registry())
    found = []
    for top in ("grader", "attnprep"):
        for f in sorted((root / top).rglob("*.py")):
            for tok in tokenize.generate_tokens(io.StringIO(f.read_text(encoding="utf-8")).readline):
                if tok.type == tokenize.STRING and tok.string.strip("\"'") in ids:
                    found.append(f"{f.relative_to(root)}:{tok.start[0]} {tok.string}")
    assert not found, found


def test_an_explicit_exercise_beats_the_files_header(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep import history
    from attnprep.app import app

    # a correct GQA module whose header says gqa, checked as mha: graded as mha, and it says so
    shutil.copy(CORPUS / "gqa" / "ok_repeat_interleave.py", tmp_path / "mha.py")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "mha", "--json"])
    doc = json.loads(result.stdout)
    (only,) = doc["results"]
    assert only["exercise"] == "mha" and only["verdict"] == "contract"
    assert any("# attnprep: gqa" in n for n in only["notes"])
    assert [r.exercise for r in history.runs()] == ["mha"]
    again = CliRunner().invoke(app, ["check", "mha.py", "-e", "gqa", "--json"])
    assert json.loads(again.stdout)["results"][0]["verdict"] == "passed"


def test_the_trace_child_of_a_failure_is_started_before_the_mistake_is_named(monkeypatch):
    """The divergence finder's child runs while the judge names the mistake (engine._Tracing is
    made from Judge.result's ``compared``); a passing attempt starts none."""
    from attnprep.grader import engine, judge

    events = []
    start_trace, diagnose = engine._start_trace, judge.Judge._diagnose
    monkeypatch.setattr(engine, "_start_trace", lambda *a: events.append("trace") or start_trace(*a))
    monkeypatch.setattr(judge.Judge, "_diagnose", lambda self, c: events.append("diagnose") or diagnose(self, c))
    result = grade(CORPUS / "gqa" / "gqa_heads_tiled.py", "gqa")
    assert not result.passed and result.diagnoses and result.divergence is not None
    assert events == ["trace", "diagnose"]
    events.clear()
    assert grade(CORPUS / "gqa" / "ok_repeat_kv_llama.py", "gqa").passed
    assert events == []


@pytest.mark.parametrize(("attempt", "key"), rows("gradients_unjudged"))  # tests/corpus/<id>/examples.toml
def test_a_wrong_output_carries_no_gradients_failure(attempt, key, graded):
    """Issue 30 §2: outputs already wrong without gradients explain the gradients' difference; the
    row is left unjudged (not failed) and never asks whether the attempt is right only under
    torch.no_grad()."""
    result = graded(CORPUS / attempt)
    checks = {c.id: c for c in result.checks}
    assert checks["output"].passed is False
    gradients = checks["gradients"]
    assert gradients.passed is None and gradients.message.key == key == "check.gradients.outputs_wrong"
    assert result.verdict is not Verdict.GRADIENTS


def test_right_only_under_no_grad_is_still_a_wrong_output(graded):
    result = graded(CORPUS / "hostile" / "right_only_under_no_grad.py")
    checks = {c.id: c for c in result.checks}
    assert checks["output"].passed is True
    assert checks["gradients"].passed is False and checks["gradients"].message.key == "check.gradients.outputs_differ"
    assert result.verdict is Verdict.WRONG_OUTPUT


@pytest.mark.parametrize(("attempt", "names"), rows("gradients_of_inputs"))
def test_a_function_exercise_never_says_every_parameter(attempt, names, graded):
    """Exercises without parameters: the gradients row names the inputs it grades, not parameters."""
    ok = {c.id: c for c in graded(CORPUS / attempt).checks}["gradients"]
    assert ok.passed is True and ok.message.key in ("check.gradients.ok_inputs", "check.gradients.ok_any")
    assert "parameter" not in texts.render(ok.message, "en") and "参数" not in texts.render(ok.message, "zh")
    assert ok.message.params["names"] == names


def test_check_a_folder_says_what_it_skipped_and_why(tmp_path, monkeypatch):
    """Issue 30 §9: a header-less my_sdpa.py, notes.py and sub/gqa.py are named on stderr with the
    reason; mha.py is graded; --json keeps stdout to its document."""
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    shutil.copy(exercises.get("mha").solution_path, tmp_path / "mha.py")
    (tmp_path / "my_sdpa.py").write_text("import torch\n\ndef sdpa(q, k, v):\n    return q\n")
    (tmp_path / "notes.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    shutil.copy(exercises.get("gqa").solution_path, tmp_path / "sub" / "gqa.py")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    for args in (["check"], ["check", "."], ["check", "--json"]):
        out = runner.invoke(app, ["--lang", "en", *args])
        assert out.exit_code == 0, out.output
        err = " ".join(out.stderr.split())
        assert "skipped my_sdpa.py: no `# attnprep: <id>` first line" in err and "-e sdpa" in err
        assert "skipped notes.py" in err and "-e" not in err.split("skipped notes.py")[1].split("skipped")[0]
        assert "skipped sub/: subfolders are not searched" in err
        assert "empty" not in err and "mha.py" not in err
        if "--json" in args:
            assert [r["exercise"] for r in json.loads(out.stdout)["results"]] == ["mha"]
    (tmp_path / "mha.py").unlink()
    none = runner.invoke(app, ["--lang", "en", "check"])
    assert none.exit_code == 2 and "skipped notes.py" in " ".join(none.stderr.split())


@pytest.mark.parametrize(("attempt", "case"), rows("heatmap_case"))
def test_the_heatmap_of_a_failure_never_shows_identical_attention(attempt, case, graded):
    """Issue 30 §4: a failing report's heat-map is of a case where the attempt's attention differs
    from the reference's, or there is none (case "")."""
    result = graded(CORPUS / attempt)
    assert not result.passed
    heatmap = result.heatmap
    if not case:
        assert heatmap is None
    else:
        assert heatmap is not None and heatmap.case == case and heatmap.got is not None
        assert heatmap.got != heatmap.expected


@pytest.mark.parametrize(("raw", "line", "says"), [
    (b"\xe9# attnprep: mha\nimport torch\n", 1, "not valid utf-8 (byte 0xe9 at line 1)"),  # was line 0
    (b"# attnprep: mha\n# -*- coding: foo -*-\nimport torch\n", 2, "unknown encoding: foo"),
    (b"# attnprep: mha\nimport torch\nx = 1\0\n", 3, "null bytes"),
])
def test_a_file_python_cannot_read_names_its_line(raw, line, says, tmp_path):
    """Issue 30 §12: as Python does, the byte and the line; never line 0."""
    path = tmp_path / "attempt.py"
    path.write_bytes(raw)
    result = grade(path, "mha")
    assert result.verdict is Verdict.SYNTAX
    text = texts.render(result.error.message, "en")
    assert says in text and f"line {line}" in text and "line 0" not in text


def test_the_syntax_panel_has_a_caret_under_the_column(tmp_path):
    path = tmp_path / "attempt.py"
    path.write_text("# attnprep: mha\nimport torch\nclass A:\n    def f(self):\n        x = (1 +\n        return x\n")
    result = grade(path, "mha")
    assert result.verdict is Verdict.SYNTAX
    assert result.error.traceback.splitlines()[1:] == ["    x = (1 +", "        ^"]  # under the "(", as Python shows


def test_a_missing_package_says_how_to_install_it(tmp_path):
    """Issue 30 §12: `from einops import …` where einops is not installed says `pip install`
    for that package into the Python attnprep runs on; a typo inside an installed package does not."""
    import sys

    source = (CORPUS / "mha" / "ok_textbook.py").read_text(encoding="utf-8")
    path = tmp_path / "attempt.py"
    path.write_text(source.replace("import math\n", "import math\nfrom sklearn_not_here_xyz import rearrange\n", 1))
    result = grade(path, "mha")
    assert result.verdict is Verdict.ERROR and result.error.message.key == "error.missing_module"
    text = texts.render(result.error.message, "en")
    assert f"`{sys.executable} -m pip install sklearn_not_here_xyz`" in text and "line 6" in text
    assert "pip install" in texts.render(result.error.message, "zh")
    path.write_text(source.replace("import math\n", "import math\nimport torch.nn.functionl\n", 1))
    typo = grade(path, "mha")
    assert typo.error.message.key == "error.raised" and "pip" not in texts.render(typo.error.message, "en")


def test_a_timeout_names_the_line_that_was_running(tmp_path):
    """Issue 30 §12: an attempt stopped for its time says which of its lines was running."""
    path = CORPUS / "hostile" / "infinite_loop_init.py"
    result = grade(path, "mha", timeout=2.5)
    assert result.verdict is Verdict.TIMEOUT
    message = result.error.message
    lines = path.read_text(encoding="utf-8").splitlines()
    assert message.key == "error.timeout_at" and lines[message.params["line"] - 1].strip() in ("while True:  # wait for a condition that never comes", "pass")
    assert "at line" in texts.render(message, "en") and "停在第" in texts.render(message, "zh")


def test_tiled_copies_merged_into_the_references_shape_are_the_line(tmp_path):
    """Issue 30 §3: einops' repeat(k, "b g t d -> b (r g) t d") (expand + reshape inside einops) and
    Meta's repeat_kv with the new axis before n_kv are tiles: the divergence is that line, not the
    scores two lines later; the fix gives the einops form "b (g r) t d". (An expand that the
    reference leaves to broadcasting, MQA's one head, is still no story of its own: that exercise's own test module.)"""
    expand = CORPUS / "gqa" / "repeat_kv_bthd_expand_wrong_axis.py"
    lines = expand.read_text(encoding="utf-8").splitlines()
    d = grade(expand).divergence
    assert d is not None and ".expand(bs, slen, n_rep, n_kv_heads, head_dim)" in lines[d.line - 1]
    assert "b (g r) t d" in exercises.get("gqa").mistake("gqa_heads_tiled").fix
    try:
        import einops  # noqa: F401
    except ImportError:
        return  # not a dependency of attnprep: the einops attempt is graded where it is installed
    path = tmp_path / "gqa.py"
    path.write_text(
        "# attnprep: gqa\nimport math\n\nimport torch\nimport torch.nn as nn\nfrom einops import rearrange, repeat\n\n\n"
        "class GroupedQueryAttention(nn.Module):\n"
        "    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):\n"
        "        super().__init__()\n"
        "        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads\n"
        "        self.q_proj = nn.Linear(d_model, d_model)\n"
        "        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)\n"
        "        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)\n"
        "        self.o_proj = nn.Linear(d_model, d_model)\n\n"
        "    def forward(self, x, attention_mask=None, is_causal=False):\n"
        "        B, T, C = x.shape\n"
        "        q = rearrange(self.q_proj(x), 'b t (h d) -> b h t d', h=self.h)\n"
        "        k = rearrange(self.k_proj(x), 'b t (g d) -> b g t d', g=self.g)\n"
        "        v = rearrange(self.v_proj(x), 'b t (g d) -> b g t d', g=self.g)\n"
        "        k = repeat(k, 'b g t d -> b (r g) t d', r=self.h // self.g)\n"
        "        v = repeat(v, 'b g t d -> b (r g) t d', r=self.h // self.g)\n"
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)\n"
        "        if is_causal:\n"
        "            scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float('-inf'))\n"
        "        if attention_mask is not None:\n"
        "            scores = scores.masked_fill(~attention_mask[:, None, None, :], float('-inf'))\n"
        "        return self.o_proj(rearrange(scores.softmax(-1) @ v, 'b h t d -> b t (h d)'))\n")
    result = grade(path)
    assert [g.id for g in result.diagnoses] == ["gqa_heads_tiled"]
    assert result.divergence is not None and result.divergence.code.startswith("k = repeat(k, 'b g t d -> b (r g) t d'")


@pytest.mark.parametrize("name", ["gqa/mistral_query_rows_tiled.py", "sdpa/dim_ignored_bottom_right.py",
                                  "cross_entropy/ignore_index_hardcoded.py", "sampling/abc_warpers_temperature_on_probs.py"])
def test_the_debug_switch_the_internal_error_footer_advises_grades_alike(name, graded, monkeypatch):
    """ATTNPREP_DEBUG=1 (what an internal error's footer advises) shows the grader's own failures,
    not the pairs of mistakes whose edits of the reference overlap (no variant) nor a variant that
    raises as the mistake it stands for does (an unguarded ignore_index): both are passed over as
    without it. (A sixth of the corpus was an internal error under it; the divergence finder's own
    slip it showed on the sampling attempt is mended.)"""
    monkeypatch.setenv("ATTNPREP_DEBUG", "1")
    path = CORPUS / name
    debugged, plain = grade(path, name.split("/")[0]), graded(path)
    assert not debugged.internal, debugged.error
    assert (debugged.verdict, [d.id for d in debugged.diagnoses]) == (plain.verdict, [d.id for d in plain.diagnoses])

"""`attnprep dev check ID` (attnprep/devcheck.py): an exercise folder validated in words, as the
tests validate the registry (rustlings' `dev check`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnprep import devcheck, exercises, texts
from attnprep.app import app


@pytest.fixture
def bank(tmp_path, monkeypatch):
    """A copy of the exercise bank (and of norms' corpus) that a test may break."""
    here = tmp_path / "exercises"
    shutil.copytree(exercises.HERE, here, ignore=shutil.ignore_patterns("__pycache__"))
    corpus = tmp_path / "corpus"
    shutil.copytree(devcheck.CORPUS / "norms", corpus / "norms")
    monkeypatch.setattr(exercises, "HERE", here)
    monkeypatch.setattr(devcheck, "CORPUS", corpus)
    exercises.cache_clear()
    yield here
    exercises.cache_clear()


def by_rule(found):
    return {(f.rule, f.ok) for f in found}


def test_a_complete_folder_holds_every_rule(bank):
    found = list(devcheck.findings("norms", grade_corpus=False))
    assert [f for f in found if not f.ok] == []
    assert {f.rule for f in found} == {"folder", "hints", "texts", "mistakes", "solution", "stub", "reference", "plants",
                                     "corpus"}
    for f in found:
        assert texts.t(f.key, **f.params)  # every finding has words, in both languages
        assert texts.t(f.key, "zh", **f.params)


def test_what_is_missing_is_said_rule_by_rule(bank):
    toml = bank / "norms" / "exercise.toml"
    source = toml.read_text(encoding="utf-8")
    start = source.index("hints = [")
    toml.write_text(source[:start] + 'hints = ["one", "one"]\n' + source[source.index("]\n", start) + 2:], encoding="utf-8")
    (bank / "norms" / "zh.toml").unlink()
    for path in (devcheck.CORPUS / "norms").glob("*.py"):  # every attempt of that mistake alone
        if devcheck.corpus_header(path)[1] == "norm_unbiased_variance":
            path.unlink()
    exercises.cache_clear()
    found = list(devcheck.findings("norms", grade_corpus=False))
    bad = {f.rule: f for f in found if not f.ok}
    assert set(bad) == {"hints", "texts", "corpus"}, bad
    assert bad["hints"].params == {"count": 1, "least": 3}
    assert "zh.toml" in bad["texts"].params["path"]
    assert bad["corpus"].params["ids"] == "norm_unbiased_variance"


def test_a_typo_in_grading_is_said_in_words_not_a_traceback(bank):
    toml = bank / "norms" / "exercise.toml"
    source = toml.read_text(encoding="utf-8")
    toml.write_text(source.replace("[grading]\n", "[grading]\ntolerence = 1\n", 1), encoding="utf-8")
    exercises.cache_clear()
    found = list(devcheck.findings("norms", grade_corpus=False))
    (bad,) = [f for f in found if not f.ok]
    assert bad.rule == "folder" and bad.key == "devcheck.grading_keys"
    assert bad.params["unknown"] == "tolerence" and bad.params["missing"] == "-"
    assert "tolerence" in texts.t(bad.key, "zh", **bad.params)


@pytest.mark.parametrize("entry, unknown, missing, wrong", [
    ("{ dim = 16, epsilon = 1e-5 }", "epsilon", "-", "-"),  # a typo: not silently the default eps
    ("{ eps = 1e-5 }", "-", "dim", "-"),
    ('{ dim = "16" }', "-", "-", "dim"),
])
def test_a_config_that_does_not_fit_its_kind_is_said_in_words(bank, entry, unknown, missing, wrong):
    """An entry of [grading] configs is typed by its kind (norms: dim, eps): a key it does not
    read, one it needs, a value of the wrong type are said with the entry they are in."""
    toml = bank / "norms" / "exercise.toml"
    source = toml.read_text(encoding="utf-8")
    start = source.index("configs = [")
    end = source.index("]", source.index("{", start))
    toml.write_text(source[:start] + f"configs = [{{ dim = 8 }}, {entry}]" + source[end + 1:], encoding="utf-8")
    exercises.cache_clear()
    found = list(devcheck.findings("norms", grade_corpus=False))
    (bad,) = [f for f in found if not f.ok]
    assert bad.rule == "folder" and bad.key == "devcheck.config_keys"
    assert (bad.params["where"], bad.params["unknown"], bad.params["missing"], bad.params["wrong"]) == (
        "configs[1]", unknown, missing, wrong)
    for lang in ("en", "zh"):
        said = texts.t(bad.key, lang, **bad.params)
        assert "configs[1]" in said and "norm_modules" in said and "{" not in said


def test_a_corpus_attempt_that_the_grader_reads_otherwise_is_named(bank):
    attempt = devcheck.CORPUS / "norms" / "norm_weight_not_applied.py"
    lines = attempt.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = "# diagnosis: norm_eps_missing\n"
    attempt.write_text("".join(lines), encoding="utf-8")
    for other in devcheck.CORPUS.glob("norms/*.py"):
        if other != attempt and "ok_llama" not in other.name:
            other.unlink()
    found = [f for f in devcheck.findings("norms") if f.key.startswith("devcheck.attempt")]
    assert [(f.ok, f.params["file"]) for f in found] == [(False, "norm_weight_not_applied.py"), (True, "ok_llama.py")]
    assert found[0].params["named"] == "norm_weight_not_applied"


def test_a_corpus_attempt_headed_for_another_exercise_is_named(bank):
    """A corpus copied from another exercise keeps that exercise's `# attnprep: <id>` first line:
    the tests would grade it as that exercise."""
    attempt = devcheck.CORPUS / "norms" / "ok_llama.py"
    text = attempt.read_text(encoding="utf-8")
    assert text.startswith("# attnprep: norms\n")
    attempt.write_text(text.replace("# attnprep: norms", "# attnprep: other_exercise", 1), encoding="utf-8")
    bad = [f for f in devcheck.findings("norms", grade_corpus=False) if not f.ok]
    assert [(f.key, f.params) for f in bad] == [("devcheck.corpus_other_header", {"id": "norms", "files": "ok_llama.py"})]
    assert "ok_llama.py" in texts.t(bad[0].key, **bad[0].params) and "第 1 行" in texts.t(bad[0].key, "zh", **bad[0].params)


def test_a_fix_in_the_exercises_own_names_is_shown_and_checked(bank):
    """``[fixes]`` in an exercise.toml words a shared mistake's fix in that exercise's names (and in
    zh.toml in Chinese); a fix for a mistake it does not list, or without its Chinese, is named."""
    toml, zh = bank / "norms" / "exercise.toml", bank / "norms" / "zh.toml"
    mistake = exercises.get("norms").mistakes[0].id
    en_text, zh_text = toml.read_text(encoding="utf-8"), zh.read_text(encoding="utf-8")
    toml.write_text(en_text + f'\n[fixes]\n{mistake} = "Use the own names of norms."\n', encoding="utf-8")
    zh.write_text(zh_text + f'\n[fixes]\n{mistake} = "用 norms 自己的名字。"\n', encoding="utf-8")
    exercises.cache_clear()
    assert exercises.get("norms").mistake(mistake).fix == "Use the own names of norms."
    assert exercises.registry("zh")["norms"].mistake(mistake).fix == "用 norms 自己的名字。"
    assert [f for f in devcheck.findings("norms", grade_corpus=False) if not f.ok] == []
    zh.write_text(zh_text, encoding="utf-8")
    exercises.cache_clear()
    assert exercises.registry("zh")["norms"].mistake(mistake).fix == "Use the own names of norms."
    (bad,) = [f for f in devcheck.findings("norms", grade_corpus=False) if not f.ok]
    assert bad.rule == "texts" and bad.params["keys"] == f"fixes.{mistake}"
    toml.write_text(en_text + '\n[fixes]\nno_such_mistake = "x"\n', encoding="utf-8")
    exercises.cache_clear()
    (bad,) = [f for f in devcheck.findings("norms", grade_corpus=False) if not f.ok]
    assert bad.rule == "folder" and "no_such_mistake" in bad.params["error"]


def test_the_command_exits_1_on_a_broken_folder_and_2_on_an_unknown_id(bank):
    (bank / "norms" / "zh.toml").unlink()
    exercises.cache_clear()
    result = CliRunner().invoke(app, ["dev", "check", "norms", "--fast"])
    assert result.exit_code == 1, result.output
    assert "✗ texts" in result.output and "zh.toml" in result.output
    result = CliRunner().invoke(app, ["dev", "check", "nroms"])
    assert result.exit_code == 2 and "norms" in result.output


def test_dev_corpus_writes_an_attempt_for_each_unnamed_edit_and_keeps_what_exists(bank):
    """`attnprep dev corpus ID`: the reference with each edit whose mistake no attempt names, headed
    with what the grader says of it; an edit that no longer applies is said, an existing file kept."""
    corpus = devcheck.CORPUS / "swiglu"
    corpus.mkdir()
    shutil.copy(Path(__file__).parent / "corpus" / "swiglu" / "swiglu_relu.py", corpus)  # relu is named
    toml = bank / "swiglu" / "exercise.toml"
    source = toml.read_text(encoding="utf-8")
    edits = source.index("[grading.edits]")
    toml.write_text(source[:edits] + "[grading.edits]\n" + "\n".join([
        'swiglu_gelu = [{ old = "F.silu(gate)", new = "F.gelu(gate)" }]',
        'swiglu_relu = [{ old = "F.silu(gate)", new = "F.relu(gate)" }]',
        'swiglu_sigmoid = [{ old = "F.silu(gate)", new = "torch.sigmoid(gate)" }]',
        'swiglu_no_activation = [{ old = "no such text", new = "(gate)" }]',
    ]) + "\n", encoding="utf-8")
    exercises.cache_clear()
    (corpus / "edit_swiglu_sigmoid.py").write_text("# mine\n", encoding="utf-8")

    found = list(devcheck.generate_corpus("swiglu"))
    said = {f.key.rsplit(".", 1)[1]: f for f in found}
    assert set(said) == {"generate_written", "generate_kept", "generate_edit_broken"}, found
    assert said["generate_edit_broken"].params["knob"] == "swiglu_no_activation"
    assert (corpus / "edit_swiglu_sigmoid.py").read_text(encoding="utf-8") == "# mine\n"  # never replaced
    written = corpus / "edit_swiglu_gelu.py"
    assert said["generate_written"].params["file"].endswith(written.name)
    head = written.read_text(encoding="utf-8").splitlines()[:3]
    assert head == ["# attnprep: swiglu", "# expect: wrong_output", "# diagnosis: swiglu_gelu"]
    assert devcheck.corpus_header(written) == ("wrong_output", "swiglu_gelu")
    assert "F.gelu(gate)" in written.read_text(encoding="utf-8")
    for f in found:
        assert texts.t(f.key, **f.params) and texts.t(f.key, "zh", **f.params)

    again = list(devcheck.generate_corpus("swiglu"))  # gelu is named now; the broken edit is still said
    assert {f.key.rsplit(".", 1)[1] for f in again} == {"generate_kept", "generate_edit_broken"}


def test_dev_corpus_on_an_exercise_without_edits_says_so(bank):
    (devcheck.CORPUS / "norms").mkdir(exist_ok=True)
    toml = bank / "norms" / "exercise.toml"
    source = toml.read_text(encoding="utf-8")
    start = source.index("[grading.edits]")  # its mistakes as code variants, as the older kinds had them
    toml.write_text(source[:start] + source[source.index("\n[", start + 1) + 1:], encoding="utf-8")
    exercises.cache_clear()
    assert "edits" not in exercises.get("norms").grading
    (found,) = devcheck.generate_corpus("norms")
    assert not found.ok and found.key == "devcheck.generate_no_edits"
    result = CliRunner().invoke(app, ["dev", "corpus", "nroms"])
    assert result.exit_code == 2 and "norms" in result.output


def test_a_reference_comment_without_its_chinese_and_a_chinese_mistake_without_its_fix_are_said(bank):
    """What tests/test_zh_solutions.py and tests/test_zh_texts.py require of a new exercise, said by
    dev check before the suite runs: `attnprep solution`'s words for every comment and docstring,
    and title, why and fix for each of its own mistakes in Chinese."""
    import tomllib

    words = bank / "norms" / "solution.zh.toml"
    table = tomllib.loads(words.read_text(encoding="utf-8"))
    dropped = next(iter(table["comments"]))
    text = words.read_text(encoding="utf-8")
    start = text.index(f'"{dropped}"') if f'"{dropped}"' in text else text.index(dropped)
    words.write_text(text[:start] + text[text.index("\n", start) + 1:], encoding="utf-8")
    own = bank / "norms" / "mistakes.zh.toml"
    zh = own.read_text(encoding="utf-8")
    first_fix = zh.index("\nfix = ")
    own.write_text(zh[:first_fix] + zh[zh.index("\n", first_fix + 1):], encoding="utf-8")
    exercises.cache_clear()
    found = list(devcheck.findings("norms", grade_corpus=False))
    bad = {f.rule: f for f in found if not f.ok}
    assert set(bad) == {"solution", "mistakes"}, bad
    assert bad["solution"].params["first"] == dropped and bad["solution"].params["count"] == 1
    first_id = tomllib.loads(zh)["mistake"][0]["id"]
    assert bad["mistakes"].params["ids"] == first_id
    assert "solution.zh.toml" in texts.t(bad["solution"].key, **bad["solution"].params)


def test_what_attnprep_solution_would_leave_in_english_is_listed():
    """wording.missing_words, which dev check says in words: the comments that say something and the
    docstrings without their words, by docstring name ("module" for the file's own)."""
    from attnprep import wording

    source = '"""A module."""\n\n\ndef f(x):\n    """Doubles x."""\n    return 2 * x  # twice the input, on purpose\n'
    comments, docstrings = wording.missing_words("norms", source, "zh")
    assert comments == ["twice the input, on purpose"] and docstrings == ["f"]  # norms has words for "module"
    shape_only = "y = x  # (B, T, C)\n"
    assert wording.missing_words("norms", shape_only, "zh") == ([], [])

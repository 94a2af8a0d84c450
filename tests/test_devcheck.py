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
    assert {f.rule for f in found} == {"folder", "hints", "texts", "mistakes", "solution", "stub", "reference", "plants", "edits", "notes",
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


# --- a new exercise of an existing kind, written from the README's recipe alone -------------------
# README "Adding an exercise, step by step" and "Functions of tensors": a folder with exercise.toml
# (contract, hints, notes, [grading] configs / outputs / probes / knobs / edits / cases), its own
# mistakes.toml and their zh texts, and solutions/<id>.py; no engine code. Round contrib15 wrote
# two such exercises (a min-p sampler, a GeGLU FFN) from the README and met each bad-data error
# below as a KeyError or an error blamed on the attempt; these keep them one clear line.

RECIPE_SOLUTION = '''"""Min-p sampling: keep the tokens whose probability is at least min_p times the top one's."""

import torch


def min_p_probs(logits: torch.Tensor, min_p: float = 0.1, temperature: float = 1.0) -> torch.Tensor:
    """Probabilities (B, V): softmax(logits / T), tokens below min_p · max removed, renormalised."""
    logits = logits / temperature  # (B, V)
    probs = torch.softmax(logits, dim=-1)  # (B, V)
    threshold = min_p * probs.amax(dim=-1, keepdim=True)  # (B, 1)
    keep = probs >= threshold  # (B, V)
    return torch.softmax(logits.masked_fill(~keep, float("-inf")), dim=-1)  # (B, V)
'''
RECIPE_SOLUTION_ZH = '''[docstrings]
module = "min-p 采样：保留概率不低于 min_p 乘以最大概率的 token。"
min_p_probs = "概率 (B, V)：softmax(logits / T)，去掉低于 min_p · max 的 token，重新归一化。"
'''
RECIPE_TOML = '''title = "Min-p sampling"
difficulty = "easy"
minutes = 5
order = 99
summary = "The distribution a min-p sampler draws from."
hints = ["softmax(logits / temperature)", "threshold = min_p * the row's max", "keep, -inf, softmax again"]
mistakes = ["zz_min_p_absolute", "zz_min_p_not_renormalised", "tensor_without_device", "used_builtin"]

[contract]
kind = "tensor_functions"
objects = ["min_p_probs"]
constructor = ""
forward = "logits: torch.Tensor, min_p: float = 0.1, temperature: float = 1.0"
returns = "(B, V) probabilities"
details = "softmax(logits / temperature), tokens below min_p times the top probability set to 0, renormalised."

[notes]
key_points = ["The threshold is relative to the top token.", "Temperature comes first.", "Removed tokens are exactly 0."]

[[notes.qa]]
q = "Question 0 about min-p?"
a = "An answer of at least eight words about min-p sampling, number 0."

[[notes.qa]]
q = "Question 1 about min-p?"
a = "An answer of at least eight words about min-p sampling, number 1."

[[notes.qa]]
q = "Question 2 about min-p?"
a = "An answer of at least eight words about min-p sampling, number 2."

[[notes.qa]]
q = "Question 3 about min-p?"
a = "An answer of at least eight words about min-p sampling, number 3."

[[notes.qa]]
q = "Question 4 about min-p?"
a = "An answer of at least eight words about min-p sampling, number 4."

[grading]
configs = [{ B = 4, V = 13 }, { B = 2, V = 6 }]
outputs = { probs = "logits" }
probes = ["batch", "device"]
knobs = ["zz_min_p_absolute", "zz_min_p_not_renormalised"]

[grading.edits]
zz_min_p_absolute = [{ old = "threshold = min_p * probs.amax(dim=-1, keepdim=True)", new = "threshold = min_p" }]
zz_min_p_not_renormalised = [{ old = "torch.softmax(logits.masked_fill(~keep, float(\\"-inf\\")), dim=-1)", new = "probs.masked_fill(~keep, 0.0)" }]

[[grading.cases]]
name = "min_p=0.1"
observe = true
args = { min_p = 0.1 }
stable = { min_p = 1e-4 }
inputs.logits = { shape = ["B", "V"], scale = 2.0 }

[[grading.cases]]
name = "min_p=0.3, temperature=0.7"
args = { min_p = 0.3, temperature = 0.7 }
stable = { min_p = 1e-4 }
alone = [1, 2]
inputs.logits = { shape = ["B", "V"], scale = 2.0 }
'''
RECIPE_MISTAKES = {
    "en": '''[[mistake]]
id = "zz_min_p_absolute"
title = "min_p used as an absolute threshold"
why = "The threshold is min_p times the top probability."
fix = "keep = probs >= min_p * probs.amax(dim=-1, keepdim=True)"

[[mistake]]
id = "zz_min_p_not_renormalised"
title = "kept probabilities not renormalised"
why = "Zeroing the removed tokens leaves rows that sum to less than 1."
fix = "softmax again over the kept logits"
''',
    "zh": '''[[mistake]]
id = "zz_min_p_absolute"
title = "把 min_p 当成了绝对阈值"
why = "阈值是 min_p 乘以最大概率。"
fix = "keep = probs >= min_p * probs.amax(dim=-1, keepdim=True)"

[[mistake]]
id = "zz_min_p_not_renormalised"
title = "保留下来的概率没有重新归一化"
why = "只把去掉的 token 置 0，每行的和小于 1。"
fix = "对保留的 logit 再做一次 softmax"
''',
}
RECIPE_ZH = '''title = "Min-p 采样"
summary = "min-p 采样器抽样用的分布。"
hints = ["先算 softmax(logits / temperature)", "threshold = min_p * 每行的最大值", "保留，置 -inf，再做一次 softmax"]

[contract]
details = "softmax(logits / temperature)，低于 min_p 乘以最大概率的 token 置 0，重新归一化。"

[notes]
key_points = ["阈值相对于最可能的 token。", "先做温度。", "去掉的 token 恰好为 0。"]

[[notes.qa]]
q = "关于 min-p 的问题 0？"
a = "关于 min-p 采样的回答，第 0 个。"

[[notes.qa]]
q = "关于 min-p 的问题 1？"
a = "关于 min-p 采样的回答，第 1 个。"

[[notes.qa]]
q = "关于 min-p 的问题 2？"
a = "关于 min-p 采样的回答，第 2 个。"

[[notes.qa]]
q = "关于 min-p 的问题 3？"
a = "关于 min-p 采样的回答，第 3 个。"

[[notes.qa]]
q = "关于 min-p 的问题 4？"
a = "关于 min-p 采样的回答，第 4 个。"
'''
RECIPE_ABSOLUTE = '''# attnprep: {id}
import torch


def min_p_probs(logits, min_p=0.1, temperature=1.0):
    p = torch.softmax(logits / temperature, dim=-1)
    p = torch.where(p >= min_p, p, torch.zeros_like(p))
    return p / p.sum(-1, keepdim=True)
'''


@pytest.fixture
def recipe(bank):
    """The README's recipe followed in a copy of the bank: the folder, and the solution beside the
    others (where the grader knows reference code; removed after). Its id is the test's own: the
    solutions folder is shared by the workers that run tests at once."""
    yield from _exercise_in(bank, "zz_recipe", {
        "exercise.toml": RECIPE_TOML, "zh.toml": RECIPE_ZH, "mistakes.toml": RECIPE_MISTAKES["en"],
        "mistakes.zh.toml": RECIPE_MISTAKES["zh"], "solution.zh.toml": RECIPE_SOLUTION_ZH}, RECIPE_SOLUTION)


def _exercise_in(bank, prefix: str, files: dict[str, str], solution_text: str, stub_from: str = ""):
    """An exercise folder of a uuid'd id in the bank's copy, its files written, the stub of ``stub_from``
    copied when given, and its solution beside the others (where the grader knows reference code; removed
    after): the solutions folder is shared by the workers that run tests at once."""
    import uuid

    folder = bank / f"{prefix}_{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    if stub_from:
        shutil.copy(bank / stub_from / "stub.py.j2", folder / "stub.py.j2")
    solution = exercises.SOLUTIONS_DIR / f"{folder.name}.py"
    solution.write_text(solution_text, encoding="utf-8")
    exercises.cache_clear()
    try:
        yield folder
    finally:
        solution.unlink(missing_ok=True)
        exercises.cache_clear()


def test_an_exercise_written_from_the_readme_is_picked_up_graded_and_names_its_mistakes(recipe, tmp_path):
    from attnprep.grader import grade
    from attnprep.grader.result import Verdict

    assert recipe.name in exercises.registry() and exercises.get(recipe.name).contract.kind == "tensor_functions"
    found = {f.rule: f for f in devcheck.findings(recipe.name, grade_corpus=False) if f.rule != "corpus"}
    assert [f for f in found.values() if not f.ok and f.rule != "plants"] == [], found  # plants: a later step
    assert found["reference"].ok and found["edits"].ok and found["stub"].ok
    attempt = tmp_path / "absolute.py"
    attempt.write_text(RECIPE_ABSOLUTE.format(id=recipe.name), encoding="utf-8")
    result = grade(attempt, recipe.name)
    assert result.verdict is Verdict.WRONG_OUTPUT and [d.id for d in result.diagnoses] == ["zz_min_p_absolute"]


def _broken(folder, old: str, new: str) -> None:
    toml = folder / "exercise.toml"
    text = toml.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    toml.write_text(text.replace(old, new), encoding="utf-8")
    exercises.cache_clear()


# (what is broken: old text -> new text, the finding's key, words its line must hold)
BAD_DATA = [
    ("toml", ("minutes = 5", "minutes = 5 5"), "devcheck.data_toml", ["exercise.toml", "line 3"]),
    ("missing title", ('title = "Min-p sampling"\n', ""), "devcheck.data_missing", ["title"]),
    ("top-level typo", ("hints = [", "hint = ["), "devcheck.data_missing", ["hints"]),
    ("difficulty", ('difficulty = "easy"', 'difficulty = "simple"'), "devcheck.data_not_one_of", ["difficulty", "simple"]),
    ("minutes as text", ("minutes = 5", 'minutes = "5"'), "devcheck.data_type", ["minutes"]),
    ("contract typo", ('returns = "(B, V) probabilities"', 'return = "(B, V) probabilities"'), "devcheck.data_missing",
     ["[contract] returns"]),
    ("unknown mistake", ('"zz_min_p_absolute", "zz_min_p_not_renormalised", "tensor', '"zz_min_p_absolut", "zz_min_p_not_renormalised", "tensor'),
     "devcheck.data_unknown_mistake", ["zz_min_p_absolut"]),
    # contrib15's min-p and contrib20's RMSNorm backward both left it out: dev check said all rules hold,
    # tests/test_registry.py failed (every tensor_functions exercise lists it, README step 3)
    ("shared mistake not listed", ('"tensor_without_device", "used_builtin"', '"used_builtin"'), "devcheck.mistakes_listing",
     ["exercise.toml", "tensor_without_device"]),
    ("shared mistake that cannot happen", ('"tensor_without_device", "used_builtin"', '"tensor_without_device", "used_builtin", "causal_ignored"'),
     "devcheck.mistakes_listing", ["exercise.toml", "causal_ignored"]),
    ("case key typo", ("stable = { min_p = 1e-4 }\nalone", "stabel = { min_p = 1e-4 }\nalone"), "devcheck.case_keys",
     ["cases[1]", "stabel"]),
    ("inputs typo", ('observe = true\nargs = { min_p = 0.1 }\nstable = { min_p = 1e-4 }\ninputs.logits',
                     'observe = true\nargs = { min_p = 0.1 }\nstable = { min_p = 1e-4 }\ninputz.logits'),
     "devcheck.case_keys", ["cases[0]", "inputz", "inputs"]),
    ("shape typo", ('alone = [1, 2]\ninputs.logits = { shape', 'alone = [1, 2]\ninputs.logits = { shap'),
     "devcheck.case_keys", ["cases[1]", "inputs.logits", "shap"]),
    ("dtype", ('alone = [1, 2]\ninputs.logits = { shape = ["B", "V"], scale = 2.0 }',
               'alone = [1, 2]\ninputs.logits = { shape = ["B", "V"], dtype = "float16" }'), "devcheck.case_keys",
     ["cases[1]", "dtype"]),
    ("stable without its argument", ("observe = true\nargs = { min_p = 0.1 }\n", "observe = true\n"), "devcheck.case_keys",
     ["cases[0]", "args.min_p"]),
    ("call", ('name = "min_p=0.1"\n', 'name = "min_p=0.1"\ncall = "min_p_prob"\n'), "devcheck.case_keys", ["cases[0]", "call"]),
    ("no observed case", ("observe = true\n", ""), "devcheck.case_keys", ["observe"]),
    ("alone", ("alone = [1, 2]", "alone = [1]"), "devcheck.case_keys", ["cases[1]", "alone"]),
    ("outputs", ('outputs = { probs = "logits" }', 'outputs = { probs = "logit" }'), "devcheck.case_keys", ["outputs", "probs"]),
    ("configs", ("{ B = 2, V = 6 }", "{ B = 2, W = 6 }"), "devcheck.config_keys", ["configs[1]", "W", "V"]),
    ("edit not found", ('new = "threshold = min_p" }', 'new = "threshold = min_p" }]\nzz_extra = [{ old = "min_p*", new = "" }'),
     "devcheck.edits_edit_without_knob", ["zz_extra"]),
    ("edit text", ('old = "threshold = min_p * probs', 'old = "threshold = min_p*probs'), "devcheck.edits_not_once",
     ["zz_min_p_absolute", "0 times"]),
    ("knob without edit", ('knobs = ["zz_min_p_absolute",', 'knobs = ["zz_min_p_nope", "zz_min_p_absolute",'),
     "devcheck.edits_knob_without_edit", ["zz_min_p_nope"]),
]


@pytest.mark.parametrize("change, key, words", [b[1:] for b in BAD_DATA], ids=[b[0] for b in BAD_DATA])
def test_each_kind_of_bad_exercise_data_is_one_line_naming_the_file_and_the_field(recipe, change, key, words, monkeypatch, capsys):
    """dev check says the broken rule in words (in both languages); `attnprep check` on an attempt of
    the exercise says it in one line naming the file and the field, exit 3 (an attnprep bug), never a
    traceback nor an error blamed on the attempt."""
    _broken(recipe, *change)
    bad = [f for f in devcheck.findings(recipe.name, grade_corpus=False) if not f.ok and f.rule not in ("plants", "corpus")]
    assert [f.key for f in bad] == [key], bad
    for lang in ("en", "zh"):
        said = texts.t(key, lang, **bad[0].params)
        assert "{" not in said.replace("{ ", "") and all(w in said for w in words if lang == "en" or w.isidentifier()), said
    if key.startswith(("devcheck.edits", "devcheck.mistakes")):
        return  # the grader runs; the mistake is what goes unnamed (the rule above says it)
    attempt = recipe.parent.parent / f"{recipe.name}.py"
    attempt.write_text(RECIPE_ABSOLUTE.format(id=recipe.name), encoding="utf-8")
    import sys

    from attnprep import cli

    monkeypatch.setattr(sys, "argv", ["attnprep", "check", str(attempt)])  # the console script's path
    monkeypatch.delenv("ATTNPREP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli._run(app)
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert ended.value.code == 3 and len(lines) == 1, out + err
    assert f"exercises/{recipe.name}/exercise.toml" in lines[0] and all(w in lines[0] for w in words), lines


@pytest.mark.parametrize("name, old, new, key, words", [
    ("mistakes.toml", 'why = "The threshold', 'wyh = "The threshold', "devcheck.data_missing", ["mistakes.toml", "why"]),
    ("mistakes.toml", 'id = "zz_min_p_absolute"\n', 'id = "zz_min_p_absolute"\nseverity = "high"\n', "devcheck.data_unknown",
     ["mistakes.toml", "severity"]),
    ("zh.toml", 'title = "Min-p 采样"', 'title = "Min-p 采样" "x"', "devcheck.data_toml", ["zh.toml", "line 1"]),
])
def test_a_broken_mistakes_or_language_file_is_named_with_its_field(recipe, name, old, new, key, words, monkeypatch, capsys):
    """The exercise's other data files: a mistake without its why, a key the catalogue does not know,
    a zh.toml that is not TOML: one finding, and one line from the CLI naming the file (was a
    TypeError from Mistake(**fields), a bare TOMLDecodeError)."""
    import sys

    from attnprep import cli

    path = recipe / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    exercises.cache_clear()
    bad = [f for f in devcheck.findings(recipe.name, grade_corpus=False) if not f.ok and f.rule not in ("plants", "corpus")]
    assert [f.key for f in bad] == [key], bad
    assert all(w in texts.t(key, **bad[0].params) for w in words)
    attempt = recipe.parent.parent / f"{recipe.name}.py"
    attempt.write_text(RECIPE_ABSOLUTE.format(id=recipe.name), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["attnprep", "--lang", "zh" if name == "zh.toml" else "en", "check", str(attempt)])
    monkeypatch.delenv("ATTNPREP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli._run(app)
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert ended.value.code == 3 and len(lines) == 1 and f"exercises/{recipe.name}/{name}" in lines[0], out + err


def test_a_reference_that_fails_says_its_first_failed_check_in_words(recipe):
    """The finding names the check and says its detail (which case, which probe: the batch probe's
    "row 1 alone", met by an exercise whose weight input has no batch axis, was a bare
    "wrong_shape (shapes)"). Here the reference scales by the whole batch's max: its rows alone differ."""
    solution = exercises.SOLUTIONS_DIR / f"{recipe.name}.py"
    text = solution.read_text(encoding="utf-8")
    old = "logits = logits / temperature  # (B, V)"
    assert text.count(old) == 1
    solution.write_text(text.replace(old, "logits = logits / temperature / logits.abs().max()  # (B, V)"), encoding="utf-8")
    exercises.cache_clear()
    (bad,) = [f for f in devcheck.findings(recipe.name, grade_corpus=False) if f.rule == "reference"]
    assert not bad.ok and bad.params["checks"] == "batch" and "alone" in bad.params["detail"], bad
    for lang in ("en", "zh"):
        said = texts.t(bad.key, lang, **bad.params)
        assert bad.params["detail"].split()[0] in said or lang == "zh", said
        assert "{" not in said


# --- an attention_functions exercise whose attention takes an argument other than a window ---------
# contrib20 wrote a soft-capped causal attention (Gemma-2) from the README: `args = ["softcap"]` was
# refused (the kind's configs knew `window` only), and the mask function was called with every
# argument. Now each name of `args` is a config key typed by the contract's forward, and `mask_args`
# says which the mask function takes.

CAPPED_SOLUTION = '''"""Causal attention with the scores soft-capped: softcap · tanh(scores / softcap)."""

import math

import torch
import torch.nn.functional as F


def zz_cap_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool (seq_len, seq_len): True where key j <= query i."""
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))  # (T, T)


def zz_cap_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softcap: float,
                     attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(capped q·kᵀ / sqrt(D) + causal and padding masks)·v, (B, H, T, D)."""
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores = softcap * torch.tanh(scores / softcap)  # (B, H, T, T), in (-softcap, softcap)
    allowed = zz_cap_mask(T, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    return F.softmax(scores, dim=-1) @ v  # (B, H, T, D)
'''
CAPPED_TOML = RECIPE_TOML[:RECIPE_TOML.index("mistakes = [")] + '''mistakes = ["zz_cap_ignored", "used_builtin"]

[contract]
kind = "attention_functions"
objects = ["zz_cap_mask", "zz_cap_attention"]
constructor = ""
forward = "q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softcap: float, attention_mask: torch.Tensor | None = None"
returns = "(B, H, T, D)"
details = "The scaled scores capped as softcap * tanh(scores / softcap), then the causal and padding masks."
''' + RECIPE_TOML[RECIPE_TOML.index("[notes]"):RECIPE_TOML.index("[grading]")] + '''[grading]
configs = [{ heads = 2, dim = 4, softcap = 0.75 }, { heads = 1, dim = 8, softcap = 3.0 }]
args = ["softcap"]
mask_args = []
knobs = ["zz_cap_ignored"]
fill = 'float("-inf")'

[grading.edits]
zz_cap_ignored = [{ old = "scores = softcap * torch.tanh(scores / softcap)", new = "scores = scores" }]
'''
CAPPED_SOLUTION_ZH = '''[comments]
"(B, H, T, T), in (-softcap, softcap)" = "(B, H, T, T)，都在 (-softcap, softcap) 之间"

[docstrings]
module = "带 soft-cap 的因果注意力：softcap · tanh(scores / softcap)。"
zz_cap_mask = "bool (seq_len, seq_len)：key j <= query i 的位置为 True。"
zz_cap_attention = "softmax(截断后的 q·kᵀ / sqrt(D) + 因果掩码和 padding 掩码)·v，形状 (B, H, T, D)。"
'''
CAPPED_MISTAKES = {
    "en": '''[[mistake]]
id = "zz_cap_ignored"
title = "soft-cap not applied"
why = "The scores reach the softmax uncapped."
fix = "scores = softcap * torch.tanh(scores / softcap)"
''',
    "zh": '''[[mistake]]
id = "zz_cap_ignored"
title = "没做 soft-cap"
why = "注意力分数没截断就进了 softmax。"
fix = "scores = softcap * torch.tanh(scores / softcap)"
''',
}
CAPPED_ATTEMPT = '''# attnprep: {id}
import math

import torch


def zz_cap_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def zz_cap_attention(q, k, v, softcap, attention_mask=None):
    T = q.shape[-2]
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    keep = zz_cap_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    return s.masked_fill(~keep, float("-inf")).softmax(-1) @ v
'''


@pytest.fixture
def capped(bank):
    zh = RECIPE_ZH.replace('details = "softmax(logits / temperature)，低于 min_p 乘以最大概率的 token 置 0，重新归一化。"',
                           'details = "缩放后的注意力分数先截断成 softcap * tanh(scores / softcap)，再加因果掩码和 padding 掩码。"')
    # the kind shares no stub (its exercises' objects differ): the folder has its own, causal's
    yield from _exercise_in(bank, "zz_capped", {
        "exercise.toml": CAPPED_TOML, "zh.toml": zh, "mistakes.toml": CAPPED_MISTAKES["en"],
        "mistakes.zh.toml": CAPPED_MISTAKES["zh"], "solution.zh.toml": CAPPED_SOLUTION_ZH}, CAPPED_SOLUTION, stub_from="causal")


def test_an_attention_function_with_an_argument_of_its_own_is_data(capped, tmp_path):
    """`args = ["softcap"]`, `mask_args = []`: the configs give softcap, the attention is called with it,
    the mask function without it (and its messages are the plain causal mask's, not a window's)."""
    from attnprep.grader import grade
    from attnprep.grader.kinds import kind_for
    from attnprep.grader.result import Verdict

    kind = kind_for(exercises.get(capped.name))
    assert [c["softcap"] for c in kind.configs] == [0.75, 3.0] and kind.mask_arg_names == []
    found = {f.rule: f for f in devcheck.findings(capped.name, grade_corpus=False)
             if f.rule in ("folder", "reference", "edits", "stub")}
    assert all(f.ok for f in found.values()), found
    attempt = tmp_path / "uncapped.py"
    attempt.write_text(CAPPED_ATTEMPT.format(id=capped.name), encoding="utf-8")
    result = grade(attempt, capped.name)
    assert result.verdict is Verdict.WRONG_OUTPUT and [d.id for d in result.diagnoses] == ["zz_cap_ignored"]
    mask_check = next(c for c in result.checks if c.id == "mask_function")
    assert mask_check.passed and mask_check.message.key == "mask.ok"  # not "i - window < j <= i"


def test_a_kind_without_a_shared_stub_needs_the_folders_own_and_says_so(capped, monkeypatch, capsys):
    """attention_functions has no exercises/stubs/ template: a folder without stub.py.j2 was a
    FileNotFoundError (an internal error in dev check and in every command)."""
    import sys

    from attnprep import cli

    (capped / "stub.py.j2").unlink()
    exercises.cache_clear()
    (bad,) = [f for f in devcheck.findings(capped.name, grade_corpus=False) if not f.ok]
    assert bad.key == "devcheck.data_no_stub" and bad.params["path"] == f"exercises/{capped.name}/stub.py.j2"
    assert "attention_functions" in texts.t(bad.key, "zh", **bad.params)
    attempt = capped.parent.parent / f"{capped.name}.py"
    attempt.write_text(CAPPED_ATTEMPT.format(id=capped.name), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["attnprep", "check", str(attempt)])
    monkeypatch.delenv("ATTNPREP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli._run(app)
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert ended.value.code == 3 and len(lines) == 1 and f"exercises/{capped.name}/stub.py.j2" in lines[0], out + err


@pytest.mark.parametrize("old, new, key, words", [
    ("mask_args = []", 'mask_args = ["window"]', "devcheck.grading_value", ["mask_args", "window"]),
    ("{ heads = 1, dim = 8, softcap = 3.0 }", "{ heads = 1, dim = 8 }", "devcheck.config_keys", ["configs[1]", "softcap"]),
    ("{ heads = 1, dim = 8, softcap = 3.0 }", '{ heads = 1, dim = 8, softcap = "3" }', "devcheck.config_keys",
     ["configs[1]", "softcap"]),
])
def test_an_argument_the_data_gets_wrong_is_one_line(capped, old, new, key, words, monkeypatch, capsys):
    import sys

    from attnprep import cli

    _broken(capped, old, new)
    bad = [f for f in devcheck.findings(capped.name, grade_corpus=False) if not f.ok and f.rule not in ("plants", "corpus", "mistakes")]
    assert [f.key for f in bad] == [key], bad
    for lang in ("en", "zh"):
        said = texts.t(key, lang, **bad[0].params)
        assert "{" not in said and all(w in said for w in words), said
    attempt = capped.parent.parent / f"{capped.name}.py"
    attempt.write_text(CAPPED_ATTEMPT.format(id=capped.name), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["attnprep", "check", str(attempt)])
    monkeypatch.delenv("ATTNPREP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli._run(app)
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert ended.value.code == 3 and len(lines) == 1, out + err
    assert f"exercises/{capped.name}/exercise.toml" in lines[0] and all(w in lines[0] for w in words), lines


def test_a_chinese_text_that_loses_the_englishs_code_is_said(recipe):
    """The tests' Chinese rules (attnprep/zhrules.py) are dev check's: contrib20's zh.toml dropped
    "(q_norm, k_norm)" and used an ASCII comma beside Chinese, and dev check said all rules hold."""
    zh = recipe / "zh.toml"
    text = zh.read_text(encoding="utf-8")
    old = '"threshold = min_p * 每行的最大值"'
    assert text.count(old) == 1
    zh.write_text(text.replace(old, '"阈值是每行最大值的若干倍, 再比较"'), encoding="utf-8")
    exercises.cache_clear()
    bad = [f for f in devcheck.findings(recipe.name, grade_corpus=False) if not f.ok and f.rule not in ("plants", "corpus")]
    assert [f.key for f in bad] == ["devcheck.zh_rules"], bad
    assert bad[0].params["count"] == 2 and "identifier min_p" in bad[0].params["first"]
    said = texts.t(bad[0].key, **bad[0].params)
    assert "hints[1]" in said and "ASCII punctuation" in said and "{" not in said


def test_a_solution_word_that_is_never_shown_and_one_borrowed_from_another_reference_are_said(recipe):
    """A key of the exercise's own solution.zh.toml that no docstring or comment has ("RMSNorm.__doc__"
    for a class RMSNorm) was ignored; a docstring that takes the shared file's words written for
    another reference's differently-worded docstring of that name (mla's RMSNorm: float32, DeepSeek)
    showed them."""
    own = recipe / "solution.zh.toml"
    own.write_text(own.read_text(encoding="utf-8") + '"min_p_probs.__doc__" = "多余的一条。"\n', encoding="utf-8")
    exercises.cache_clear()
    (bad,) = [f for f in devcheck.findings(recipe.name, grade_corpus=False) if f.rule == "solution" and not f.ok]
    assert bad.key == "devcheck.solution_words_stale" and bad.params["keys"] == "min_p_probs.__doc__"
    assert "min_p_probs" in bad.params["names"].split(", ")
    own.write_text(RECIPE_SOLUTION_ZH, encoding="utf-8")
    solution = exercises.SOLUTIONS_DIR / f"{recipe.name}.py"
    solution.write_text(solution.read_text(encoding="utf-8") + \
        '\n\nclass RMSNorm(torch.nn.Module):\n    """x / rms(x) * weight, in the input\'s dtype."""\n', encoding="utf-8")
    exercises.cache_clear()
    (bad,) = [f for f in devcheck.findings(recipe.name, grade_corpus=False) if f.rule == "solution" and not f.ok]
    assert bad.key == "devcheck.solution_words_borrowed" and bad.params["name"] == "RMSNorm"
    assert bad.params["other"] in ("mla", "mla_decode")
    for lang in ("en", "zh"):
        assert "RMSNorm" in texts.t(bad.key, lang, **bad.params)

"""attnprep in Chinese (issue 16): runs of the CLI with the language chosen by $ATTNPREP_LANG, the
locale or --lang contain no English sentence outside code, ids, shapes and the terms the glossary
keeps in English; --json keeps its ids and keys in English; the report stays within 80 columns.
A run is `python -m attnprep` in a fresh interpreter (:func:`run`) where the process is part of
what is tested (--lang, read before the app; the locale; the drill), else the app in this process
(:func:`invoke`), whose output is the subprocess's byte for byte."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.cells import cell_len

from attnprep import exercises, texts

ROOT = Path(__file__).resolve().parent.parent
FAILING = ROOT / "tests" / "corpus" / "gqa" / "gqa_heads_tiled.py"
PASSING = ROOT / "tests" / "corpus" / "mha" / "ok_textbook.py"

# English the glossary keeps (names of methods, models and established terms), and the words of
# Click's usage line; compared case-insensitively, word by word.
KEPT = set("""
    softmax MHA MQA GQA MLA RoPE layernorm rmsnorm kv cache flashattention einsum padding token
    tokens query key value q k v dtype device batch eval dropout bias view reshape transpose nan
    inf attnprep tensor linear python gpu cpu cuda deepseek llama gpt one hot meta flops
    flopcountermode usage options command args target id dir min max seq shell locale json stdout
    todo bug traceback repeat naive absorbed fp32 bf16 fp16 visual editor ctrl c b t h d g nope p
    out default required en zh lang plain causal padded case str int float none true false
""".lower().split())
CODE = re.compile(r"`[^`]*`|《[^》]*》|'[^']*'|\"[^\"]*\"")
IDENTIFIER = re.compile(r"\S*[_()\[\]./\\@=<>:#$*+|-]\S*|\S*\d\S*")
MATH = re.compile(r"[b-zB-Z]")  # a single letter is a variable of a formula (i - window < j <= i); "a" is a word
ENGLISH = re.compile(r"[A-Za-z]+(?:[ ,]+[A-Za-z]+){2,}")


def english_left(text: str) -> list[str]:
    """Runs of 3+ plain English words once code spans, identifiers, shapes, numbers and the
    glossary's English terms are taken out."""
    found = []
    for line in text.splitlines():
        if line.strip().startswith("Usage:"):
            continue
        line = CODE.sub(" ", line)
        line = IDENTIFIER.sub(" ", line)
        line = re.sub(r"[^\x00-\x7f]", " · ", line)
        line = " ".join(w if w.strip(",;").lower() not in KEPT and not MATH.fullmatch(w.strip(",;")) else "·"
                        for w in re.split(r"(\s+)", line) if w.strip())
        found += [m.group(0) for m in ENGLISH.finditer(line)]
    return found


def test_checker_finds_the_english_of_an_english_report(tmp_path):
    proc = invoke("check", str(FAILING), home=tmp_path, lang="en")
    assert len(english_left(proc.stdout)) > 5


def test_checker_finds_english_and_spares_code():
    assert english_left("the attempt was still running") == ["the attempt was still running"]
    assert english_left("第 3 行：q.view(B, T, H, D) 的 head_dim 和 `attnprep check mha` 都是代码") == []
    assert english_left("softmax 行和 · KV 缓存 · padding token") == []
    assert english_left("在 i - window < j <= i 处为 True") == []
    assert english_left("（the first wrong values come from here）") == ["the first wrong values come from here"]


def run(*args: str, env: dict | None = None, home: Path, lang: str | None = "zh") -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("ATTNPREP_LANG", "LANG", "LC_ALL", "LC_MESSAGES")}
    environ.update({"ATTNPREP_HOME": str(home), "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"})
    if lang:
        environ["ATTNPREP_LANG"] = lang
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "attnprep", *args], capture_output=True, text=True,
                          env=environ, cwd=home, timeout=120)


def invoke(*args: str, env: dict | None = None, home: Path, lang: str | None = "zh") -> SimpleNamespace:
    """What :func:`run` gives, from the app run in this process (typer's CliRunner) with the same
    environment and folder: for the commands whose words are the point, not the process (a
    command that grades would pay torch's import again in a fresh interpreter, some 1.6 s of CPU).
    ``--lang``, read by ``attnprep.cli.main`` before the app, needs :func:`run`."""
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401  (registers the commands on the app)
    from attnprep.app import app

    environ = {"ATTNPREP_LANG": lang, "LANG": None, "LC_ALL": None, "LC_MESSAGES": None, "ATTNPREP_HOME": str(home),
               "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb", **(env or {})}
    with contextlib.chdir(home):
        result = CliRunner().invoke(app, list(args), env=environ, catch_exceptions=False, prog_name="python -m attnprep")
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)


def assert_chinese(out: str) -> None:
    assert re.search(r"[\u4e00-\u9fff]", out), out
    assert english_left(out) == [], out


@pytest.mark.parametrize("args", [
    ("list",), ("hint", "mha"), ("--help",), ("check", "--help"), ("list", "--help"), ("hint", "--help"),
    ("solution", "--help"), ("stats", "--help"), ("compare", "--help"), ("drill", "--help"), ("new", "--help"),
])
def test_zh_run_has_no_english_sentence(args, tmp_path):
    proc = invoke(*args, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_chinese(proc.stdout)


def test_zh_solution_notes(tmp_path):
    """The reference source is code (its comments stay as written); the notes around it are Chinese."""
    proc = invoke("solution", "mha", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    notes = proc.stdout[proc.stdout.index(texts.t("cli.solution.key_points", "zh")):]
    assert texts.t("cli.solution.qa", "zh") in notes and texts.t("cli.solution.mistakes", "zh") in notes
    assert_chinese(notes)
    assert_chinese(proc.stdout.splitlines()[0])


def test_zh_check_failing_passing_stats_compare(tmp_path):
    failing = invoke("check", str(FAILING), home=tmp_path)
    assert failing.returncode == 1, failing.stderr
    assert_chinese(failing.stdout)
    assert exercises.mistake_catalogue("zh")["gqa_heads_tiled"].title in failing.stdout
    assert texts.t("divergence.title", "zh") in failing.stdout
    assert max(cell_len(line) for line in failing.stdout.splitlines()) <= 80

    passing = invoke("check", str(PASSING), "-e", "mha", home=tmp_path)
    assert passing.returncode == 0, passing.stderr
    assert_chinese(passing.stdout)
    assert max(cell_len(line) for line in passing.stdout.splitlines()) <= 80

    stats = invoke("stats", home=tmp_path)
    assert stats.returncode == 0, stats.stderr
    assert "gqa" in stats.stdout and texts.t("cli.stats.column.runs", "zh") in stats.stdout
    assert_chinese(stats.stdout)

    compare = invoke("compare", home=tmp_path)
    assert compare.returncode == 0, compare.stderr
    assert_chinese(compare.stdout)


def test_locale_alone_selects_chinese_and_lang_option_overrides(tmp_path):
    proc = run("list", home=tmp_path, lang=None, env={"LANG": "zh_CN.UTF-8"})
    assert "多头注意力" in proc.stdout and "not started" not in proc.stdout
    proc = run("list", home=tmp_path, lang=None, env={"LANG": "en_US.UTF-8"})
    assert "Multi-head attention" in proc.stdout and "多头注意力" not in proc.stdout
    proc = run("list", "--lang", "en", home=tmp_path)  # after the command, over $ATTNPREP_LANG
    assert "Multi-head attention" in proc.stdout
    proc = run("--lang", "zh", "hint", "mha", home=tmp_path, lang="en")
    assert "提示 1/" in proc.stdout
    bad = run("--lang", "fr", "list", home=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_json_keeps_ids_english_and_words_chinese(tmp_path):
    proc = invoke("check", str(FAILING), "--json", home=tmp_path)
    doc = json.loads(proc.stdout)
    result = doc["results"][0]
    assert result["verdict"] == "wrong_output" and result["exercise"] == "gqa"
    assert result["label"] == "输出错误"
    assert {c["id"] for c in result["checks"]} >= {"shapes", "output", "causality"}
    assert all(re.search(r"[\u4e00-\u9fff]", c["detail"]) for c in result["checks"] if c["id"] != "contract" or c["detail"])
    text = json.dumps(result, ensure_ascii=False)
    mistake = exercises.mistake_catalogue("zh")["gqa_heads_tiled"]
    assert mistake.title in text and mistake.why in text and mistake.fix in text
    assert '"gqa_heads_tiled"' in text  # the id itself stays English
    listed = json.loads(invoke("list", "--json", home=tmp_path).stdout)
    mha = next(row for row in listed if row["id"] == "mha")
    assert mha["title"] == "多头注意力"  # a text: Chinese
    assert mha["difficulty"] == "easy" and mha["status"] == "not started"  # values a program reads: English


def test_registry_reads_the_language_at_call_time(monkeypatch):
    monkeypatch.setenv("ATTNPREP_LANG", "zh")
    assert exercises.get("mha").title == "多头注意力"
    assert exercises.listing()["mha"].title == "多头注意力"
    zh_stub = exercises.render_stub(exercises.get("mha"))
    assert "手撕" in zh_stub and "多头注意力" in zh_stub
    monkeypatch.setenv("ATTNPREP_LANG", "en")
    assert exercises.get("mha").title == "Multi-head attention"
    assert exercises.listing()["mha"].title == "Multi-head attention"
    assert exercises.mistake_catalogue()["missing_scale"].title != exercises.mistake_catalogue("zh")["missing_scale"].title
    assert exercises.get("mha").hints != exercises.registry("zh")["mha"].hints


def test_a_zh_stub_is_blank_in_english_too(tmp_path, monkeypatch):
    from attnprep import workspace

    monkeypatch.setenv("ATTNPREP_LANG", "zh")
    (tmp_path / "mha.py").write_text(exercises.render_stub(exercises.get("mha")), encoding="utf-8")
    monkeypatch.setenv("ATTNPREP_LANG", "en")
    rows = {r.id: r for r in workspace.exercise_rows(tmp_path)}
    assert rows["mha"].status is workspace.Status.BLANK


def test_zh_drill_non_interactive(tmp_path):
    proc = run("drill", "mha", "--seconds", "1", home=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert texts.t("drill.time_up", "zh") in proc.stdout and texts.t("drill.end_timeout", "zh") in proc.stdout
    assert_chinese(proc.stdout)


# --- Click's and Typer's own words, usage errors, attnprep's error lines ---------------------------------

CLICK_ENGLISH = ("Usage:", "Options", "Commands", "Arguments", "Try '", "for help", "Error", "Missing argument",
                 "No such command", "No such option", "Invalid value", "Got unexpected", "is not a valid", "default:",
                 "error:")


@pytest.mark.parametrize(("args", "code"), [
    (("--help",), 0), (("check", "--help"), 0), (("new",), 2), (("nosuch",), 2), (("chek",), 2),
    (("check", "--seed", "abc", "x.py"), 2), (("list", "--bogus"), 2), (("new", "mha", "extra"), 2),
    (("check", "--seed"), 2), (("hint", "mhaa"), 2), (("compare", "--preset", "llama4"), 2),
    (("--lang", "fr", "list"), 2),
])
def test_click_and_typer_speak_chinese(args, code, tmp_path):
    proc = (run if "--lang" in args else invoke)(*args, home=tmp_path)  # --lang: read by cli.main
    out = proc.stdout + proc.stderr
    assert proc.returncode == code, out
    assert "Traceback" not in out
    assert [word for word in CLICK_ENGLISH if word in out] == [], out
    assert_chinese(out)


def test_click_keeps_its_english_in_english(tmp_path):
    proc = invoke("new", home=tmp_path, lang="en")
    assert proc.returncode == 2
    assert "Usage: python -m attnprep new" in proc.stderr and "Missing argument 'ID'." in proc.stderr and "Error" in proc.stderr
    assert "Options" in invoke("check", "--help", home=tmp_path, lang="en").stdout


def test_the_language_can_change_in_one_process(monkeypatch):
    """Typer fixes its words when its rich_utils is first imported; attnprep sets them again on each
    help and error, so that a process (the tests' CliRunner) that changes language gets the new ones."""
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    for lang, options, error in (("zh", "选项", "错误"), ("en", "Options", "Error"), ("zh", "选项", "错误")):
        monkeypatch.setenv("ATTNPREP_LANG", lang)
        helped = CliRunner().invoke(app, ["check", "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
        assert options in helped.output, helped.output
        failed = CliRunner().invoke(app, ["list", "--bogus"], env={"COLUMNS": "80", "NO_COLOR": "1"})
        assert failed.exit_code == 2 and error in failed.output, failed.output


def test_written_twice_the_stub_is_refused_in_chinese(tmp_path):
    assert invoke("new", "mha", home=tmp_path).returncode == 0
    proc = invoke("new", "mha", home=tmp_path)
    assert proc.returncode == 2 and "已经存在" in proc.stderr
    assert_chinese(proc.stderr)


def test_the_drill_says_why_it_picked_an_exercise_in_chinese(monkeypatch):
    from types import SimpleNamespace

    from attnprep import history

    monkeypatch.setenv("ATTNPREP_LANG", "zh")
    exercises_ = [SimpleNamespace(id="mha", minutes=5), SimpleNamespace(id="gqa", minutes=8)]
    now = 1_700_000_000.0

    def summary(ex, **kw):
        return history.empty_summary(ex)._replace(**kw)

    reasons = [
        history.pick_weakest(exercises_, {}, now=now)[1],
        history.pick_weakest(exercises_, {"mha": summary("mha", attempts=3, last_verdict="mask_leak")}, now=now)[1],
        history.pick_weakest(exercises_, {
            "mha": summary("mha", attempts=2, passes=1, best_drill_s=250.0, best_drill_budget_s=300.0, last_at=now - 3 * 86400),
            "gqa": summary("gqa", attempts=1, passes=1, best_drill_s=400.0, best_drill_budget_s=480.0, last_at=now - 3600),
        }, now=now)[1],
        history.pick_weakest(exercises_, {"mha": summary("mha", attempts=1, passes=1), "gqa": summary("gqa", attempts=1, passes=1)},
                             now=now)[1],
    ]
    assert reasons[0].startswith("mha 还没做过")
    assert "做过 3 次" in reasons[1] and "掩码泄漏" in reasons[1]
    assert "天前" in reasons[2] and "（83%）" in reasons[2]
    for reason in reasons:
        assert_chinese(reason)


# --- the blank files in Chinese (issue 30 point 5) ------------------------------------------------

BOILERPLATE = ("Contract (graded)", "Hand-written only", "Stuck?", "Ready-made", "ready-made", "your part",
               "write it by hand", "write them by hand", "if you are stuck", "write __init__", "write forward",
               "The grader", "gives the next hint")


def prose_of(source: str) -> list[str]:
    """The words of a Python file meant for the reader: its strings (docstrings, the messages of
    NotImplementedError) and comments."""
    import io
    import tokenize

    return [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type in (tokenize.STRING, tokenize.COMMENT)]


@pytest.mark.parametrize("exercise_id", list(exercises.registry("en")))
def test_zh_stub_has_no_english_boilerplate(exercise_id):
    stub = exercises.render_stub(exercises.registry("zh")[exercise_id], "zh")
    english = exercises.render_stub(exercises.registry("en")[exercise_id], "en")
    for phrase in BOILERPLATE:
        assert phrase not in stub, phrase
    assert any(phrase in english for phrase in BOILERPLATE)  # the check can fail: the English has them
    for text in prose_of(stub):
        assert english_left(text) == [], text


COMMANDS = ["", "list", "new", "check", "drill", "hint", "solution", "stats", "demo", "compare", "interview", "today"]


@pytest.mark.parametrize("command", COMMANDS)
def test_zh_help_at_80_columns_is_whole(command, tmp_path):
    """Nothing cut with "…" (Rich cut Chinese help, which has no spaces, at the cell's edge), within
    80 columns, no line padded with blanks."""
    proc = invoke(*([command] if command else []), "--help", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout, proc.stdout
    assert all(cell_len(line) <= 80 for line in proc.stdout.splitlines())
    assert all(line == line.rstrip() for line in proc.stdout.splitlines())
    assert_chinese(proc.stdout)
    for line in proc.stdout.splitlines():  # a wrapped Chinese line never starts with a closing mark
        body = line.strip("│ ")
        assert not body or body[0] not in "，。、；：！？）", line


# --- Chinese punctuation inside Chinese sentences (issue 30 point 5) -------------------------------

from attnprep.zhrules import ASCII_PUNCT_BY_HAN, NOT_PROSE, ascii_punctuation_by_chinese, zh_strings  # noqa: E402,F401


ZH_TOMLS = [ROOT / "attnprep" / "texts" / "zh.toml",
            *sorted((ROOT / "exercises").glob("**/*zh.toml"))]


def test_the_punctuation_check_finds_ascii_marks_in_chinese():
    assert ascii_punctuation_by_chinese("没通过, 放弃了") and ascii_punctuation_by_chinese("原因: 忘了缩放")
    assert ascii_punctuation_by_chinese("答案;下一题")
    assert not ascii_punctuation_by_chinese("q、k、v (B, H, T, D)；`a, b = c` 和 [nope 部分; pe 部分]")


@pytest.mark.parametrize("path", ZH_TOMLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_zh_texts_use_chinese_punctuation(path):
    import tomllib

    found = [line for text in zh_strings(tomllib.loads(path.read_text(encoding="utf-8")))
             for line in ascii_punctuation_by_chinese(text)]
    assert not found, "\n".join(found)


def test_zh_lists_and_clauses_joined_in_chinese(tmp_path, monkeypatch):
    """Texts the code joins (columns left out, mistakes, evidence) use 、 and ； in Chinese."""
    from attnprep import wording
    from attnprep.grader.result import Diagnosis, msg

    monkeypatch.setattr(texts, "_override", "zh")
    assert texts.t("shell.comma").join(["难度", "限时"]) == "难度、限时"
    said = wording.evidence(Diagnosis("missing_scale", evidence=(msg("evidence.variant"), msg("evidence.score_ratio", ratio=2.0))))
    assert "；" in said and not ascii_punctuation_by_chinese(said), said
    proc = invoke("list", home=tmp_path, env={"COLUMNS": "40"})
    assert proc.returncode == 0 and not ascii_punctuation_by_chinese(proc.stdout), proc.stdout


def test_an_unknown_language_is_the_same_error_from_the_environment_and_from_lang(tmp_path):
    """`ATTNPREP_LANG=fr` used to be silently English where `--lang fr` is an error: both are a
    one-line error, exit 2, before any command runs (issue 30 point 12)."""
    from_option = run("--lang", "fr", "list", home=tmp_path, lang=None)
    from_env = run("list", home=tmp_path, lang="fr")
    for proc in (from_option, from_env):
        assert proc.returncode == 2 and proc.stdout == ""
        (line,) = proc.stderr.splitlines()
        assert line.startswith("error: unknown language 'fr'") and "choose en or zh" in line
    assert run("list", home=tmp_path, lang="zh_CN.UTF-8").returncode == 0
    assert run("--lang", "en", "list", home=tmp_path, lang="fr").returncode == 0  # --lang decides
    assert run("list", home=tmp_path, lang=None, env={"LANG": "fr_FR.UTF-8"}).returncode == 0  # a locale is not a setting


def test_an_unknown_language_in_the_environment_through_the_app(monkeypatch):
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    result = CliRunner().invoke(app, ["list"], env={"ATTNPREP_LANG": "fr"})
    assert result.exit_code == 2 and "unknown language 'fr' in $ATTNPREP_LANG" in result.stderr


def test_zh_new_and_the_drill_live_area_say_their_words_in_chinese(tmp_path, monkeypatch):
    """`new`'s "wrote …", the drill's live title and its "fix:" label (issue 30 point 5)."""
    from rich.console import Console

    from attnprep import drill
    from attnprep.grader.result import Diagnosis, Result, Verdict

    proc = invoke("new", "mha", home=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith(texts.t("shell.wrote", "zh")) and "wrote" not in proc.stdout
    monkeypatch.setattr(texts, "_override", "zh")
    console = Console(record=True, width=100, force_terminal=True, color_system=None)
    title = texts.t("shell.drill_title", id="mha", file="drills/mha-x.py")
    with drill.LiveView(console, 300, title) as view:
        view.ready()
        view.graded(29.0, Result("mha", "drills/mha-x.py", Verdict.WRONG_OUTPUT, diagnoses=(Diagnosis("missing_scale"),)))
        view.superseded(31.0, 35.0)
        view.tick(40.0, 260.0)
        text = console.export_text(clear=False)
    assert "drill ·" not in text and "fix:" not in text and "saved →" not in text
    assert texts.t("shell.fix_label", "zh") in text and "限时练习 · drills/mha-x.py" in text


def wordiest() -> str:
    """The exercise whose notes (key points, questions and answers) say the most: the most prose to wrap."""
    def said(ex) -> int:
        return sum(len(text) for text in (*ex.key_points, *(text for qa in ex.qa for text in qa)))

    return max(exercises.registry("en").values(), key=said).id


@pytest.mark.parametrize("args", [("hint", "mha"), ("solution", wordiest()), ("today",)])
def test_zh_prose_never_starts_a_line_with_a_closing_mark(args, tmp_path):
    """Hints, notes, Q&A and today's reasons wrap the way Chinese is set at 60 columns (issue 30 point 6)."""
    proc = invoke(*args, home=tmp_path, env={"COLUMNS": "60"})
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        body = line.lstrip(" •│").removeprefix("A:").removeprefix("Q:").lstrip()
        assert not body or body[0] not in "，。、；：！？）", line
    assert all(cell_len(line) <= 60 for line in proc.stdout.splitlines())

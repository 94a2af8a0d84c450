"""Issue 16, done when: `ATTNPREP_LANG=zh attnprep check` on a buggy attempt of every exercise gives a
fully Chinese report, aligned at 80 columns; `LANG=zh_CN.UTF-8` alone selects it.

A realistic buggy attempt of each exercise of the registry (from its corpus) is graded once for the
test run (shared with the corpus tests), then rendered in Chinese by a Rich console 80 columns wide:
no English sentence outside code, ids, shapes and the glossary's English terms; no line wider than 80 cells; every box closed
with its borders at the same cell columns on each of its lines. Two of them go through
`attnprep check` itself on a real pseudo-terminal of 80 columns with only LANG=zh_CN.UTF-8 set.
The grader's names of its cases, calls and outputs carry text keys and are said in Chinese from them
(attnprep.grader.result.Name, attnprep.texts.say), never translated from their English.
"""

from __future__ import annotations

import dataclasses
import io
import re
import unicodedata
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from attnprep import exercises, texts
from per_exercise import chosen, exercises_of
from test_terminal import in_a_terminal, screen_lines
from test_zh import english_left

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

# One buggy attempt per exercise (``zh_report`` in its corpus's examples.toml, else its first failing
# attempt that names a mistake), chosen so that between them they show every part of the report:
# an error panel with a traceback, the structure checks of the cached and blocked kinds, the
# stage shapes of a script of calls, divergences, heat-maps, torch's own error text.
ALL_BUGGY = {exercise_id: chosen(exercise_id, "zh_report") for exercise_id in exercises.registry()}
# the cached kind's exercises: the panels with the longest Chinese lines (a script of calls, its stages)
IN_A_TERMINAL = tuple(ex.id for ex in exercises_of("cached_module"))

# What the attempt or torch wrote, shown as it is: the attempt's source lines, exception texts.
VERBATIM_PARAMS = ("text", "code", "where_code", "origin_code", "ref_code")
BOX_TOP, BOX_BOTTOM, BOX_SIDE = "╭╮", "╰╯", "│"


def test_every_exercise_has_a_buggy_attempt():
    for exercise_id, name in ALL_BUGGY.items():
        head = (CORPUS / exercise_id / name).read_text(encoding="utf-8")[:400]
        expect = re.search(r"^# expect: (\w+)", head, re.M)
        assert expect and expect.group(1) != "pass", f"{exercise_id}/{name} is not a buggy attempt"


@pytest.fixture(scope="module")
def buggy(graded):
    """``buggy(exercise_id)``: its buggy attempt's Result, graded once for the test run
    (tests/conftest.py's ``graded``: the corpus tests grade the same files)."""
    return lambda exercise_id: graded(CORPUS / exercise_id / ALL_BUGGY[exercise_id])


def render(result, width: int = 80) -> str:
    out = io.StringIO()
    from attnprep.report import render_result

    render_result(result, Console(file=out, width=width, no_color=True, highlight=False, emoji=False, force_terminal=False))
    return out.getvalue()


def _blank_message(message):
    if message is None:
        return None
    params = {}
    for key, value in message.params.items():
        if dataclasses.is_dataclass(value) and hasattr(value, "key"):  # a nested Message (a Name is the grader's own words)
            value = _blank_message(value)
        elif key in VERBATIM_PARAMS:
            value = "`…`"
        params[key] = value
    return dataclasses.replace(message, params=params)


def without_verbatim(result):
    """The result with what the attempt or torch wrote verbatim (tracebacks, exception texts, source
    lines, printed output) taken out, so that what is left is attnprep's own words."""
    changes = {
        "checks": tuple(dataclasses.replace(c, message=_blank_message(c.message)) for c in result.checks),
        "diagnoses": tuple(dataclasses.replace(d, evidence=tuple(_blank_message(m) for m in d.evidence))
                           for d in result.diagnoses),
        "notes": tuple(_blank_message(m) for m in result.notes),
        "stdout": "",
    }
    if result.error is not None:
        changes["error"] = dataclasses.replace(result.error, message=_blank_message(result.error.message), traceback="")
    if result.divergence is not None:
        changes["divergence"] = dataclasses.replace(result.divergence, code="", ref_code="…")
    return dataclasses.replace(result, **changes)


def _cell_columns(line: str) -> dict[int, str]:
    """The character starting at each cell column of a line."""
    columns, at = {}, 0
    for ch in line:
        columns[at] = ch
        at += cell_len(ch)
    return columns


def box_problems(lines: list[str]) -> list[str]:
    """Boxes whose sides are not at the cell columns of their corners, or that are not closed."""
    problems = []
    i = 0
    while i < len(lines):
        top = _cell_columns(lines[i])
        corners = [col for col, ch in top.items() if ch in BOX_TOP]
        if len(corners) != 2:
            i += 1
            continue
        left, right = corners
        for j in range(i + 1, len(lines)):
            row = _cell_columns(lines[j])
            if row.get(left) == BOX_BOTTOM[0]:
                if row.get(right) != BOX_BOTTOM[1] or cell_len(lines[j].rstrip()) != right + 1:
                    problems.append(f"line {j}: the bottom of the box of line {i} ends elsewhere: {lines[j]!r}")
                break
            if row.get(left) != BOX_SIDE or row.get(right) != BOX_SIDE or cell_len(lines[j].rstrip()) != right + 1:
                problems.append(f"line {j}: not within the borders (columns {left}, {right}) of the box of line {i}: {lines[j]!r}")
        else:
            problems.append(f"the box of line {i} is never closed")
        i += 1
    return problems


def layout_problems(out: str, width: int = 80) -> list[str]:
    lines = out.splitlines()
    found = [f"{cell_len(line)} cells: {line!r}" for line in lines if cell_len(line) > width]
    found += [f"invisible character {unicodedata.name(ch, hex(ord(ch)))} in {line!r}" for line in lines for ch in line
              if unicodedata.category(ch) in ("Cc", "Cf", "Mn")]
    return found + box_problems(lines)


# --- the report of each exercise, rendered at 80 columns ----------------------------------------------


@pytest.fixture(autouse=True)
def chinese(monkeypatch):
    monkeypatch.setenv("ATTNPREP_LANG", "zh")


@pytest.mark.parametrize("exercise_id", list(ALL_BUGGY))
def test_the_zh_report_has_no_english_sentence(exercise_id, buggy):
    result = buggy(exercise_id)
    assert not result.passed and not result.internal, (exercise_id, result.verdict, result.error)
    out = render(without_verbatim(result))
    assert texts.t(f"verdict.{result.verdict.value}", "zh") in out.splitlines()[0]
    assert english_left(out) == [], out


@pytest.mark.parametrize("exercise_id", list(ALL_BUGGY))
def test_the_zh_report_is_aligned_at_80_columns(exercise_id, buggy):
    out = render(buggy(exercise_id))
    assert "╭" in out, out  # it has panels to check
    assert layout_problems(out) == [], out


def test_the_structure_and_script_panels_say_their_cases_in_chinese(buggy):
    out = render(buggy("kv_cache"))
    assert "预填充 5、解码 1、分块 3、解码 1，第 1 步" in out  # the case and the step of the evidence
    assert "第 4 步 缓存 v（位置 0..9）" in out  # a stage of the shapes panel
    assert "prefill" not in out and "step " not in out
    out = render(buggy("flash"))
    assert "长序列 L=512 S=512 因果" in out


def test_box_problems_sees_a_misaligned_box():
    good = ["╭─ 标题 ─╮", "│ 中文   │", "╰────────╯"]
    assert box_problems(good) == []
    assert box_problems(["╭─ 标题 ─╮", "│ 中文  │", "╰────────╯"])  # one cell short
    assert box_problems(["╭─ 标题 ─╮", "│ 中文   │"])  # never closed
    assert layout_problems("x" * 81)


# --- the names of the grader's cases ------------------------------------------------------------------


def test_every_case_and_output_name_of_every_exercise_has_a_key_in_both_languages():
    """Every case of every config of every exercise, and every output a case grades, is a Name: its
    English text (from the key) is its id exactly, and its Chinese has a key of its own and no
    English left."""
    from attnprep.grader.kinds import kind_for

    left, keyless, wrong_id = {}, [], {}
    zh = texts.catalogue("zh")

    def walk(name):  # the name and the names it is made of
        yield name
        for v in getattr(name, "params", {}).values():
            if hasattr(v, "key"):
                yield from walk(v)

    for exercise in exercises.registry().values():
        kind = kind_for(exercise, 0)
        for ci in range(len(kind.configs)):
            for case in kind.cases(ci):
                outputs = [n for n in kind.expected_shapes(ci, case) if hasattr(n, "key")]
                for name in (case.name, *outputs):
                    if not hasattr(name, "key"):
                        keyless.append((exercise.id, name))
                        continue
                    if texts.say(name, "en") != name:
                        wrong_id[name] = texts.say(name, "en")
                    keyless += [(exercise.id, n.key) for n in walk(name) if n.key not in zh]
                    said = texts.say(name, "zh")
                    if english_left(said.replace("(", " (")):
                        left[str(name)] = said
    assert keyless == [] and wrong_id == {} and left == {}


def test_names_are_said_from_their_keys_not_translated_from_english():
    from attnprep.grader.cases import PADDED, PLAIN, T1, alone, changed, plus_causal
    from attnprep.grader.result import Name, Names

    name = changed(plus_causal(PADDED), "padding")
    assert name == "padded+causal, padding changed"
    assert texts.say(name, "zh") == "右 padding+因果，改动 padding 位置"
    assert texts.say(Names([T1, plus_causal(PLAIN), alone(None, 2)], quoted=True), "zh") == "'T=1'，'普通+因果'，'第 2 个样本单独跑'"
    assert texts.say(Names([PLAIN, PADDED], more=True), "en") == "plain, padded, …"
    assert texts.render(Name("x", "check.output.bad", bad=1, total=2, case=name), "zh").endswith("（第一个：'右 padding+因果，改动 padding 位置'）")
    # a plain string is said as it is: English words are never replaced by their Chinese
    assert texts.say("padded+causal", "zh") == "padded+causal"
    assert not (ROOT / "attnprep" / "texts" / "names.zh.toml").exists()


def test_a_name_keeps_its_words_through_pickle():
    """A drill's check comes back from a forked child pickled: its names still have their keys."""
    import pickle

    from attnprep.grader.cases import PADDED, changed
    from attnprep.grader.result import Names

    name = pickle.loads(pickle.dumps(changed(PADDED, "padding")))
    assert name == "padded, padding changed" and texts.say(name, "zh") == "右 padding，改动 padding 位置"
    names = pickle.loads(pickle.dumps(Names([name], quoted=True, more=True)))
    assert names.quoted and names.more and texts.say(names, "en") == "'padded, padding changed', …"


# --- a real terminal, the locale alone ----------------------------------------------------------------


def test_check_in_a_real_80_column_terminal_with_only_a_chinese_locale(tmp_path, attnprep_home):
    files = [str(CORPUS / exercise_id / ALL_BUGGY[exercise_id]) for exercise_id in IN_A_TERMINAL]
    code, raw = in_a_terminal(["check", *files], tmp_path, attnprep_home, columns=80, timeout=120,
                              env={"ATTNPREP_LANG": None, "LC_ALL": None, "LC_MESSAGES": None, "LANGUAGE": None,
                                   "LANG": "zh_CN.UTF-8"})
    lines = screen_lines(raw)
    out = "\n".join(lines)
    assert code == 1, out
    assert texts.t("verdict.structure", "zh") in out and texts.t("report.checks_failed", "zh", failed=1) in out
    assert "structure" not in out and "checks (" not in out  # not the English report
    assert layout_problems(out) == [], out

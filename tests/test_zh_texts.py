"""The Chinese texts of the exercise content (issue 16, SPEC §9).

exercises/<id>/zh.toml holds the 简体中文 of every user-facing text of exercises/<id>/exercise.toml,
exercises/mistakes.zh.toml that of every mistake in exercises/mistakes.toml. Each is held against
its English file: the same keys, list lengths and Q&A count, no extra keys; every text Chinese
unless it is pure code; the code of the English (shape literals, snake_case identifiers, backtick
spans, numbers) unchanged in the Chinese; no English sentence left over.
"""

from __future__ import annotations

import tomllib
import unicodedata

import pytest

from attnprep import exercises

HERE = exercises.HERE
EXERCISE_IDS = sorted(p.parent.name for p in HERE.glob("*/exercise.toml"))

from attnprep.zhrules import (  # noqa: E402  (the rules live in the package: dev check says them too)
    BACKTICKS, ENGLISH_RUN, HAN, IDENTIFIER, NUMBER, PROSE, QUOTED, SHAPE, problems,
)
from attnprep.zhrules import english_texts as _english_texts  # noqa: E402
from attnprep.zhrules import flat as _flat  # noqa: E402
from attnprep.zhrules import is_code as _is_code  # noqa: E402,F401
from attnprep.zhrules import shapes as _shapes  # noqa: E402,F401


def _load(path):
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _skeleton(value):
    """The structure of parsed TOML with every string replaced by its type name."""
    if isinstance(value, dict):
        return {key: _skeleton(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_skeleton(v) for v in value]
    return type(value).__name__


def _width(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


# --- exercises/<id>/zh.toml ---------------------------------------------------------------------


def test_every_exercise_is_checked():
    assert len(EXERCISE_IDS) >= 6 and set(EXERCISE_IDS) == set(exercises.registry())


@pytest.mark.parametrize("exercise_id", EXERCISE_IDS)
def test_zh_has_the_keys_and_list_lengths_of_the_english(exercise_id):
    folder = HERE / exercise_id
    assert (folder / "zh.toml").is_file(), f"exercises/{exercise_id}/zh.toml is missing"
    en = _english_texts(_load(folder / "exercise.toml"))
    zh = _load(folder / "zh.toml")
    zh.pop("names", None)  # the case names said in words: only those that need them (test below)
    # Same keys at every level, same number of hints, key points and Q&A, nothing but strings.
    assert _skeleton(zh) == _skeleton(en)


@pytest.mark.parametrize("exercise_id", EXERCISE_IDS)
def test_zh_names_are_of_the_exercises_own_cases(exercise_id):
    """``[names]`` of zh.toml says in Chinese the names of the cases ``[grading] cases`` gives as
    data (exercises.own_names): each is one of those names, said in Chinese with its code kept."""
    names = _load(HERE / exercise_id / "zh.toml").get("names", {})
    cases = {c.get("name") for c in _load(HERE / exercise_id / "exercise.toml").get("grading", {}).get("cases", [])
             if isinstance(c, dict)}
    assert set(names) <= cases, f"not a case of exercises/{exercise_id}: {sorted(set(names) - cases)}"
    found = [p for name, said in names.items() for p in problems(f"names.{name}", name, said)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("exercise_id", EXERCISE_IDS)
def test_zh_texts_are_chinese_and_keep_the_code(exercise_id):
    folder = HERE / exercise_id
    en = dict(_flat(_english_texts(_load(folder / "exercise.toml"))))
    zh = dict(_flat(_load(folder / "zh.toml")))
    found = [p for path in en if path in zh for p in problems(path, en[path], zh[path])]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("exercise_id", EXERCISE_IDS)
def test_zh_docstring_texts_fit_the_stub(exercise_id):
    """summary and details go into the stub's docstring as they are: lines of at most 100 columns,
    a CJK character counting two."""
    zh = _load(HERE / exercise_id / "zh.toml")
    blocks = {"summary": zh["summary"], "contract.details": zh.get("contract", {}).get("details", ""),
              **{f"stub.{key}": text for key, text in zh.get("stub", {}).items()}}
    wide = [f"{key}: {line!r} ({_width(line)})" for key, text in blocks.items()
            for line in text.splitlines() if _width(line) > 100]
    assert not wide, "\n".join(wide)


# --- exercises/mistakes.zh.toml -----------------------------------------------------------------


def _mistakes(name: str) -> list[dict]:
    return _load(HERE / name)["mistake"]


# the shared catalogue and each exercise folder's own mistakes (exercises/<id>/mistakes.toml)
MISTAKE_FILES = ["mistakes.toml"] + sorted(str(p.relative_to(HERE)) for p in HERE.glob("*/mistakes.toml"))


@pytest.mark.parametrize("name", MISTAKE_FILES)
def test_every_mistake_has_a_zh_entry_and_vice_versa(name):
    zh_name = name.replace("mistakes.toml", "mistakes.zh.toml")
    assert (HERE / zh_name).is_file(), f"exercises/{zh_name} is missing"
    en = [m["id"] for m in _mistakes(name)]
    zh = [m["id"] for m in _mistakes(zh_name)]
    assert len(zh) == len(set(zh)), f"a mistake id appears twice in {zh_name}"
    assert sorted(zh) == sorted(en)


@pytest.mark.parametrize("name", MISTAKE_FILES)
def test_zh_mistakes_are_chinese_and_keep_the_code(name):
    en = {m["id"]: m for m in _mistakes(name)}
    found = []
    for m in _mistakes(name.replace("mistakes.toml", "mistakes.zh.toml")):
        if set(m) - {"fix_for"} != {"id", "title", "why", "fix"}:
            found.append(f"{m['id']}: keys {sorted(m)}")
            continue
        for key in ("title", "why", "fix"):
            if m["id"] in en:
                found += problems(f"{m['id']}.{key}", en[m["id"]][key], m[key])
        # an exercise's own variant of the fix (issue 30 §11): for the same exercises as the English
        theirs = en.get(m["id"], {}).get("fix_for", {})
        if set(m.get("fix_for", {})) != set(theirs):
            found.append(f"{m['id']}: fix_for for {sorted(m.get('fix_for', {}))}, English for {sorted(theirs)}")
            continue
        for ids, text in m.get("fix_for", {}).items():
            found += problems(f"{m['id']}.fix_for[{ids}]", theirs[ids], text)
    assert not found, "\n".join(found)


# --- the checks themselves ------------------------------------------------------------------------


def test_problems_names_what_a_bad_translation_loses():
    en = "Split the heads with view(B, T, H, D).transpose(1, 2); use q_proj, not `k_proj`, for 16 heads."
    good = "用 view(B, T, H, D).transpose(1, 2) 拆头；16 个头用 q_proj，不是 `k_proj`。"
    assert problems("hints[0]", en, good) == []
    assert problems("hints[0]", en, en) == ["hints[0]: no Chinese in " + repr(en),
                                            "hints[0]: English left untranslated: 'Split the heads with'"]
    lossy = problems("hints[0]", en, "用 view(B, T, H, D).transpose(1, 2) 拆头；16 个头用 Q 投影，不是 k_proj。")
    assert lossy == ["hints[0]: identifier q_proj of the English is missing",
                     "hints[0]: code span `k_proj` of the English is missing"]
    assert problems("x", "(B, H, T, D), (syntax, position) (GQA, 2023)", "(B, T, H, D)，句法、位置（GQA，2023）") == [
        "x: shape (B, H, T, D) of the English is missing"]
    assert problems("x", "take 8 KiB", "取 6 KiB") == ["x: number 8 of the English is missing"]
    code = "out = attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)"
    assert problems("fix", code, code) == []

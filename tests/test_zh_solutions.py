"""`attnprep solution ID` (and --code) in Chinese: the reference solutions' comments and docstrings
come from exercises/<id>/solution.zh.toml over the shared exercises/solution.zh.toml
(attnprep.wording.solution_source), the code itself is the file's.

Every comment that says something (not only shapes or code) and every docstring of the reference
of each exercise has its Chinese, keeping the English's shapes, identifiers, code spans and
numbers; no entry is stale; the Chinese source is the same program.
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import tokenize
import tomllib

import pytest
from rich.cells import cell_len

from attnprep import exercises, wording
from test_zh import english_left
from test_zh_texts import problems

IDS = list(exercises.registry())


def comments(source: str) -> list[str]:
    return [t.string[1:].strip() for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]


def docstrings(source: str) -> dict[str, str]:
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node):
            out[getattr(node, "name", "module")] = ast.get_docstring(node)
    return out


def without_docstrings(source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node, clean=False):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def source(exercise_id: str) -> str:
    return exercises.get(exercise_id).solution_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_comment_and_docstring_of_the_reference_has_its_chinese(exercise_id):
    english = source(exercise_id)
    words = wording.solution_words(exercise_id, "zh")
    missing = [f"comment: {c!r}" for c in comments(english) if wording.needs_words(c) and c not in words["comments"]]
    missing += [f"docstring of {name}" for name in docstrings(english) if name not in words["docstrings"]]
    assert missing == [], f"add to exercises/{exercise_id}/solution.zh.toml:\n" + "\n".join(missing)
    found = [p for c in comments(english) if c in words["comments"] for p in problems(f"comment {c!r}", c, words["comments"][c])]
    found += [p for name, doc in docstrings(english).items() for p in problems(f"docstring of {name}", doc, words["docstrings"][name])]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_chinese_reference_is_the_same_program(exercise_id):
    english = source(exercise_id)
    chinese = wording.solution_source(exercise_id, english, "zh")
    assert chinese != english
    assert without_docstrings(chinese) == without_docstrings(english)
    said = comments(chinese)
    assert len(said) == len(comments(english))
    assert [c for c in said if c.startswith(("region ", "endregion "))] == [c for c in comments(english) if "region " in c]
    assert [c for c in said if english_left(c)] == []
    assert docstrings(chinese).keys() == docstrings(english).keys()
    assert all(english_left(doc) == [] for doc in docstrings(chinese).values())
    assert wording.solution_source(exercise_id, english, "en") == english


def test_no_entry_is_stale():
    used = {"comments": set(), "docstrings": set()}
    for exercise_id in IDS:
        english = source(exercise_id)
        path = exercises.HERE / exercise_id / "solution.zh.toml"
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        stale = sorted(set(data.get("comments", {})) - set(comments(english)))
        stale += sorted(set(data.get("docstrings", {})) - set(docstrings(english)))
        assert stale == [], f"exercises/{exercise_id}/solution.zh.toml: {stale}"
        used["comments"] |= set(comments(english))
        used["docstrings"] |= set(docstrings(english))
    shared = tomllib.loads((exercises.HERE / "solution.zh.toml").read_text(encoding="utf-8"))
    assert set(shared["comments"]) <= used["comments"] and set(shared["docstrings"]) <= used["docstrings"]


def test_needs_words():
    assert wording.needs_words(" (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)") is False
    markers = {line.strip()[1:] for path in exercises.SOLUTIONS_DIR.glob("*.py")
               for line in path.read_text(encoding="utf-8").splitlines() if line.lstrip().startswith(("# region ", "# endregion "))}
    assert markers and not any(wording.needs_words(m) for m in markers)  # the stubs' region markers
    assert wording.needs_words("(B, T), True = real token: padded keys get no attention") is True


def run(*args: str, lang: str = "zh") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_MESSAGES")}
    env.update({"ATTNPREP_LANG": lang, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"})
    return subprocess.run([sys.executable, "-m", "attnprep", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("exercise_id", ["mla_decode", "flash"])
def test_solution_in_chinese_fits_80_columns(exercise_id):
    proc = run("solution", exercise_id)
    assert proc.returncode == 0, proc.stderr
    wide = [line for line in proc.stdout.splitlines() if cell_len(line) > 80]
    assert wide == []
    assert "多头潜在注意力" in proc.stdout or "在线 softmax" in proc.stdout

"""`list`, `new`, `solution`, `hint`: the CLI through CliRunner and the library side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import attnprep.cli  # noqa: F401  (registers the commands on the app)
from attnprep import exercises, hints, paths, workspace
from attnprep.app import app
from attnprep.workspace import Status

MHA = exercises.get("mha")
ALL = list(exercises.registry().values())


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """80 columns, no colour forced from outside, whatever the environment of the test run."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "50")
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "ATTNPREP_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Path:
    """An empty workspace folder, made the current folder."""
    folder = tmp_path / "ws"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def flat(text: str) -> str:
    """Output with Rich's wrapping undone: every run of whitespace becomes one space."""
    return " ".join(text.split())


def assert_usage_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


# --- list ------------------------------------------------------------------------------------


def test_list_table_shows_every_exercise_in_registry_order_with_its_status(ws):
    (ws / "mha.py").write_text(exercises.render_stub(MHA), encoding="utf-8")
    result = run("list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[0].split()
    assert header == ["id", "title", "difficulty", "drill", "status"]  # no history yet: no record, best
    rows: dict[str, list[str]] = {}  # id -> the row's lines (a long title wraps onto the next line)
    for line in lines[1:]:
        if not line.strip():
            break
        if line[0].isspace():
            list(rows.values())[-1].append(line)
        else:
            rows[line.split()[0]] = [line]
    assert list(rows) == [e.id for e in ALL]  # registry order, each once
    for ex in ALL:
        first, words = rows[ex.id][0], flat(" ".join(rows[ex.id])).split()
        assert all(word in words for word in ex.title.split()), rows[ex.id]
        assert f" {ex.difficulty} " in first and f" {ex.minutes} min " in first
        expected = "blank" if ex.id == "mha" else "not started"
        assert first.rstrip().endswith(f"  {expected}"), first
    assert all(len(line) <= 80 for line in lines)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_list_fits_80_columns_one_line_per_exercise(ws, lang):
    """Every exercise's row is one line at 80 columns (a title that wraps pushes the table past a
    screen and reads as two exercises)."""
    from attnprep import texts

    try:
        out = run("--lang", lang, "list", env={"COLUMNS": "80"}).stdout
    finally:
        texts.set_language(None)  # --lang stays set in this process: back to the environment
    rows = [line for line in out.splitlines()[1:] if line.strip() and not line.startswith(" ")]
    ids = list(exercises.registry())
    table = out.splitlines()[1:1 + len(ids)]
    assert [line.split()[0] for line in table] == ids, out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert not any(line.startswith(" ") and line.strip() for line in out.splitlines()[1:1 + len(ids)]), out
    assert rows


def test_list_json_shape_and_status_follows_the_workspace(ws):
    def listed() -> list[dict]:
        result = run("list", "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)  # the whole of stdout is one JSON document

    data = listed()
    assert [d["id"] for d in data] == [e.id for e in ALL]
    for d, ex in zip(data, ALL):
        assert d == {"id": ex.id, "title": ex.title, "difficulty": ex.difficulty, "minutes": ex.minutes, "status": "not started"}

    assert run("new", "mha").exit_code == 0
    statuses = {d["id"]: d["status"] for d in listed()}
    assert statuses["mha"] == "blank"
    assert all(status == "not started" for id_, status in statuses.items() if id_ != "mha")
    path = ws / "mha.py"
    path.write_text(path.read_text(encoding="utf-8").replace("raise NotImplementedError", "pass  #", 1), encoding="utf-8")
    assert {d["id"]: d["status"] for d in listed()}["mha"] == "in progress"


def test_exercise_rows_library(ws, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "mha.py").write_bytes(exercises.render_stub(MHA).replace("\n", "\r\n").encode())  # a Windows editor
    rows = workspace.exercise_rows(other)
    assert [r.id for r in rows] == [e.id for e in ALL]
    mha = next(r for r in rows if r.id == "mha")
    assert all(r.status is Status.NOT_STARTED for r in rows if r.id != "mha")
    assert mha.status is Status.BLANK and mha.path == other / "mha.py"
    assert mha.to_json()["status"] == "blank"

    (other / "mha.py").write_text("# attnprep: mha\nclass MultiHeadAttention: ...\n", encoding="utf-8")
    assert workspace.status_of(MHA, other) is Status.IN_PROGRESS
    (other / "mha.py").unlink()
    (other / "mha.py").mkdir()  # something that is not a readable file
    assert workspace.status_of(MHA, other) is Status.UNREADABLE
    assert workspace.status_of(MHA, ws) is Status.NOT_STARTED


def test_blank_stub_is_cached_under_the_key_of_its_sources(attnprep_home, tmp_path, monkeypatch):
    """status_of compares with the rendered stub kept in the data folder's cache; a cache whose key
    no longer matches its sources is rendered afresh; an unusable cache only costs a render."""
    cached = attnprep_home / "cache" / "stub-mha.py"
    assert workspace.blank_stub("mha") == exercises.render_stub(MHA)
    key, _, text = cached.read_text(encoding="utf-8").partition("\n")
    assert key.startswith("# key: ") and text == exercises.render_stub(MHA)

    cached.write_text(key + "\nstale", encoding="utf-8")  # same key: the cache is trusted
    assert workspace.blank_stub("mha") == "stale"

    source = tmp_path / "source.txt"  # a source file changes: a new key, a fresh render
    source.write_text("v1", encoding="utf-8")
    monkeypatch.setattr(exercises, "stub_sources", lambda exercise_id, lang="en": [source])
    assert workspace.blank_stub("mha") == exercises.render_stub(MHA)
    assert cached.read_text(encoding="utf-8").partition("\n")[2] == exercises.render_stub(MHA)
    cached.write_text(cached.read_text(encoding="utf-8").partition("\n")[0] + "\nstale", encoding="utf-8")
    source.write_text("v22", encoding="utf-8")  # another size
    assert workspace.blank_stub("mha") == exercises.render_stub(MHA)

    cached.unlink()
    cached.parent.rmdir()
    cached.parent.write_text("not a folder", encoding="utf-8")  # the cache cannot be written
    assert workspace.blank_stub("mha") == exercises.render_stub(MHA)
    assert [p.name for p in attnprep_home.iterdir()] == ["cache"]  # no temporary file left behind


# --- new -------------------------------------------------------------------------------------


@pytest.mark.parametrize("ex", ALL, ids=lambda e: e.id)
def test_new_writes_a_stub_that_compiles(ws, ex):
    result = run("new", ex.id)
    assert result.exit_code == 0, result.output
    path = ws / ex.filename
    source = path.read_text(encoding="utf-8")
    assert source.startswith(f"# attnprep: {ex.id}\n")
    assert exercises.detect(source) == ex.id
    assert source == exercises.render_stub(ex)
    compile(source, str(path), "exec")
    assert ex.filename in result.stdout
    assert f"attnprep check {ex.id}" in result.stdout  # the next step


def test_new_into_another_folder_creates_it_and_names_the_path_to_check(ws):
    result = run("new", "mha", "--dir", "drafts/today")
    assert result.exit_code == 0, result.output
    assert (ws / "drafts" / "today" / "mha.py").is_file()
    assert not (ws / "mha.py").exists()
    assert "attnprep check drafts/today/mha.py" in result.stdout


def test_new_never_overwrites_without_force(ws):
    path = ws / "mha.py"
    path.write_bytes(b"# attnprep: mha\n# my half-written attempt\n")
    before = path.read_bytes()
    result = run("new", "mha")
    assert_usage_error(result, "already exists", "--force")
    assert path.read_bytes() == before
    assert sorted(p.name for p in ws.iterdir()) == ["mha.py"]  # no backup, no temp file left


def test_new_force_keeps_backups_and_never_overwrites_one(ws):
    path = ws / "mha.py"
    path.write_text("first attempt\n", encoding="utf-8")
    result = run("new", "mha", "--force")
    assert result.exit_code == 0, result.output
    assert (ws / "mha.py.bak").read_text(encoding="utf-8") == "first attempt\n"
    assert path.read_text(encoding="utf-8") == exercises.render_stub(MHA)
    assert "mha.py.bak" in result.stdout

    path.write_text("second attempt\n", encoding="utf-8")
    result = run("new", "mha", "--force")
    assert result.exit_code == 0, result.output
    assert (ws / "mha.py.bak").read_text(encoding="utf-8") == "first attempt\n"  # untouched
    assert (ws / "mha.py.bak.1").read_text(encoding="utf-8") == "second attempt\n"
    assert "mha.py.bak.1" in result.stdout
    assert sorted(p.name for p in ws.iterdir()) == ["mha.py", "mha.py.bak", "mha.py.bak.1"]


def test_write_stub_library(tmp_path):
    folder = tmp_path / "a" / "b"
    written = workspace.write_stub(MHA, folder)
    assert written.path == folder / "mha.py" and written.backup is None
    assert written.path.read_text(encoding="utf-8") == exercises.render_stub(MHA)
    assert written.path.stat().st_mode & 0o044  # readable by others like any new file (not mkstemp's 0600)

    written.path.write_text("mine\n", encoding="utf-8")
    with pytest.raises(workspace.WorkspaceError, match="already exists"):
        workspace.write_stub(MHA, folder)
    assert written.path.read_text(encoding="utf-8") == "mine\n"

    (folder / "mha.py.bak").write_text("older\n", encoding="utf-8")
    again = workspace.write_stub(MHA, folder, force=True)
    assert again.backup == folder / "mha.py.bak.1"
    assert again.backup.read_text(encoding="utf-8") == "mine\n"
    assert (folder / "mha.py.bak").read_text(encoding="utf-8") == "older\n"
    assert not list(folder.glob(".*.tmp"))


@pytest.mark.parametrize(
    "blocker, where", [("a-file", "a-file/sub"), ("a-file", "a-file"), ("[y]", "[y]/[/b]")]  # the last looks like markup
)
def test_new_into_an_unwritable_folder_is_a_usage_error(ws, blocker, where):
    (ws / blocker).write_text("not a folder\n", encoding="utf-8")
    result = run("new", "mha", "--dir", where)
    assert_usage_error(result, where)
    assert (ws / blocker).read_text(encoding="utf-8") == "not a folder\n"


def test_new_over_a_folder_named_like_the_file_is_a_usage_error(ws):
    (ws / "mha.py").mkdir()
    assert_usage_error(run("new", "mha", "--force"), "is a folder")
    assert (ws / "mha.py").is_dir()


# --- solution --------------------------------------------------------------------------------


def test_solution_shows_source_notes_qa_and_mistakes(ws):
    result = run("solution", "mha")
    assert result.exit_code == 0, result.output
    out = flat(result.stdout)
    assert "class MultiHeadAttention(nn.Module):" in out
    assert "reference solution" in out
    for point in MHA.key_points:
        assert flat(point) in out
    for qa in MHA.qa:
        assert f"Q: {flat(qa.q)}" in out and f"A: {flat(qa.a)}" in out
    for m in MHA.mistakes:
        assert f"{flat(m.title)} fix: {flat(m.fix)}" in out
    # the order people read it in: code, then notes, then Q&A, then mistakes
    positions = [out.index(s) for s in ("class MultiHeadAttention", "Key points", "Interview Q&A", "Classic mistakes")]
    assert positions == sorted(positions)
    assert all(len(line) <= 80 for line in result.stdout.splitlines())


@pytest.mark.parametrize("ex", ALL, ids=lambda e: e.id)
def test_solution_code_is_the_bare_source(ws, ex):
    result = run("solution", ex.id, "--code")
    assert result.exit_code == 0, result.output
    source = ex.solution_path.read_text(encoding="utf-8")
    assert result.stdout == source
    assert "\x1b" not in result.stdout
    compile(result.stdout, f"{ex.id}_ref.py", "exec")


# --- hint ------------------------------------------------------------------------------------


def test_hints_are_progressive_persistent_and_reset(ws, attnprep_home):
    total = len(MHA.hints)
    assert total >= 2
    for n in range(1, total + 1):
        result = run("hint", "mha")
        assert result.exit_code == 0, result.output
        out = flat(result.stdout)
        assert f"hint {n}/{total}" in out
        assert flat(MHA.hints[n - 1]) in out
        for other in MHA.hints[n:]:  # nothing ahead of time
            assert flat(other) not in out
        # remembered in the user data folder, not in the workspace
        assert json.loads((attnprep_home / "state.json").read_text())["hints"]["mha"] == n
    assert not any(p.name.endswith(".json") for p in ws.iterdir())

    result = run("hint", "mha")  # past the end: says so and shows them all
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert "No more hints" in out
    for i, text in enumerate(MHA.hints, 1):
        assert f"{i}. {flat(text)}" in out
    assert hints.level("mha") == total

    result = run("hint", "mha", "--reset")
    assert result.exit_code == 0 and "reset" in result.stdout
    assert hints.level("mha") == 0
    assert f"hint 1/{total}" in flat(run("hint", "mha").stdout)


def test_hint_library_keeps_other_state_and_survives_a_damaged_file(attnprep_home):
    state = paths.state_file()
    assert state.parent == attnprep_home
    state.write_text('{"hints": {"gqa": 3}, "other": [1, 2]}', encoding="utf-8")
    step = hints.next_hint(MHA)
    assert (step.number, step.total, step.exhausted, step.label) == (1, len(MHA.hints), False, f"hint 1/{len(MHA.hints)}")
    assert step.text == MHA.hints[0] and step.revealed == (MHA.hints[0],)
    data = json.loads(state.read_text(encoding="utf-8"))
    assert data == {"hints": {"gqa": 3, "mha": 1}, "other": [1, 2]}
    hints.reset("mha")
    assert json.loads(state.read_text(encoding="utf-8")) == {"hints": {"gqa": 3}, "other": [1, 2]}

    state.write_text("{not json", encoding="utf-8")  # a damaged file reads as empty, then is rewritten
    assert hints.next_hint(MHA).number == 1
    assert json.loads(state.read_text(encoding="utf-8"))["hints"] == {"mha": 1}
    assert not list(attnprep_home.glob(".*.tmp"))


# --- errors and output -----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["new"], ["solution"], ["solution", "--code"], ["hint"], ["hint", "--reset"]])
def test_unknown_id_is_a_usage_error_with_suggestions(ws, command):
    result = run(command[0], "mhaa", *command[1:])
    assert_usage_error(result, "unknown exercise 'mhaa'", "did you mean 'mha'")
    assert list(ws.iterdir()) == []


@pytest.mark.parametrize(
    "args", [["list"], ["new", "mha"], ["hint", "mha"], ["solution", "mha"]], ids=lambda a: " ".join(a)
)
def test_no_color_means_no_colour_codes(ws, args):
    coloured = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")
    plain = run(*args, env={"NO_COLOR": "1"})
    assert plain.exit_code == 0 and "\x1b[" not in plain.output
    for p in ws.iterdir():
        p.unlink()
    hints.reset("mha")
    # forced onto a terminal, the same command is coloured unless NO_COLOR is set
    forced = run(*args, env={"FORCE_COLOR": "1"})
    assert forced.exit_code == 0 and coloured.search(forced.stdout), forced.stdout
    for p in ws.iterdir():
        p.unlink()
    hints.reset("mha")
    forced_no_color = run(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert forced_no_color.exit_code == 0
    assert not coloured.search(forced_no_color.stdout), forced_no_color.stdout


# --- shell completion of exercise ids (issue 30 point 12) -----------------------------------------


def complete(words: str, cwd: Path) -> list[str]:
    """What bash completion offers for the last word of ``words`` (the script Typer installs sets
    these variables and runs attnprep)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "_ATTNPREP_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'attnprep'; from attnprep.cli import main; main()"],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize("command", ["new", "hint", "solution", "drill", "interview"])
def test_exercise_ids_complete(command, ws):
    assert complete(f"attnprep {command} mh", ws) == [i for i in exercises.listing() if i.startswith("mh")]
    assert complete(f"attnprep {command} ", ws) == list(exercises.listing())


def test_check_completes_ids_and_python_files(ws):
    (ws / "mha.py").write_text("x = 1\n", encoding="utf-8")
    (ws / "mha_notes.txt").write_text("", encoding="utf-8")
    (ws / "mhb").mkdir()
    found = complete("attnprep check mh", ws)
    ids = [i for i in exercises.listing() if i.startswith("mh")]
    assert len(ids) >= 2 and found[:len(ids)] == ids and "mha.py" in found and "mhb/" in found
    assert "mha_notes.txt" not in found
    sd = [i for i in exercises.listing() if i.startswith("sd")]
    assert sd and complete("attnprep check -e sd", ws) == sd


# --- a folder that cannot be written: one wording for new, drill and interview (issue 30 point 12) --


def test_new_drill_and_interview_say_an_unwritable_folder_the_same_way(ws, monkeypatch):
    import errno

    real_mkdir = Path.mkdir

    def refused(self, *args, **kwargs):  # a read-only workspace (the tests may run as root)
        if str(self).startswith(str(ws)) and self != ws:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refused)
    said = {}
    for name, args in {"new": ["new", "mha", "-d", str(ws / "sub")], "drill": ["drill", "mha", "--seconds", "5"],
                       "interview": ["interview", "mha", "--answers", "/dev/null"]}.items():
        result = run(*args)
        assert_usage_error(result, "cannot create folder", "permission denied")
        said[name] = result.stderr.split(":", 2)[1].split()[:3]
    assert said["new"] == said["drill"] == said["interview"] == ["cannot", "create", "folder"]

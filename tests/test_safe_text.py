"""Text from an attempt cannot drive the terminal (issue 23): escape sequences put in every text an
attempt controls (exception type and message, traceback, printed output, layer names, quoted source
lines, file name, header) reach the report, the pytest failure text, the drill and the interview
only made visible (``\\x1b``); ``check --json`` keeps them as the attempt made them."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from rich.console import Console

from attnprep import texts, wording
from attnprep.grader.result import Check, Diagnosis, Divergence, ErrorInfo, MappingNote, Result, Verdict, msg
from attnprep.report import render_result, render_summary, verdict_line
from attnprep.safe_text import visible

ROOT = Path(__file__).resolve().parent.parent

# Clear the screen, home the cursor, draw a green "passed" line, return to the line's start, set the
# window title (OSC … BEL), turn the rest of the line around (U+202E), DEL, 8-bit CSI (U+009B).
FORGE = "\x1b[2J\x1b[H\x1b[32m✓ mha.py passed\x1b[0m\r\x1b]0;owned\x07\u202e\x7f\x9b2J"
SHOWN = "\\x1b[2J\\x1b[H\\x1b[32m✓ mha.py passed\\x1b[0m\\r\\x1b]0;owned\\x07\\u202e\\x7f\\x9b2J"
NAME_FORGE = "\x1b[2J\x1b[1;1H\x1b[32m✓_passed\x1b[0m\r"  # a module name cannot hold "."
NAME_SHOWN = "\\x1b[2J\\x1b[1;1H\\x1b[32m✓_passed\\x1b[0m\\r"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # Rich's own colours, when a console has them


def raw_controls(text: str, *, colours: bool = False) -> list[str]:
    """The control and invisible format characters of ``text`` (newlines excepted): none may come
    from an attempt. With ``colours``, Rich's own colour codes are taken out first."""
    if colours:
        text = SGR.sub("", text)
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]


@pytest.fixture(autouse=True)
def english(monkeypatch):
    monkeypatch.setenv("ATTNPREP_LANG", "en")
    texts.set_language(None)


# --- the function ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, one_line, expected", [
    (FORGE, False, SHOWN),
    ("line 1\n\tline 2\r\nline 3", False, "line 1\n\tline 2\nline 3"),  # a text of lines keeps its lines
    ("line 1\n\tline 2\r\nline 3", True, "line 1\\n\\tline 2\\r\\nline 3"),  # a name is one line
    ("bell\x07 nul\x00 bs\x08 ff\x0c vt\x0b", False, "bell\\x07 nul\\x00 bs\\x08 ff\\x0c vt\\x0b"),
    ("a\u2028b\u2029c\u200bd\ufeffe\u2066f", False, "a\\u2028b\\u2029c\\u200bd\\ufeffe\\u2066f"),
    ("tag\U000e0041", True, "tag\\U000e0041"),
    ("注意力分数　（B, H, T, T）× ≥ é", True, "注意力分数　（B, H, T, T）× ≥ é"),  # printable text is untouched
])
def test_visible_writes_control_characters_as_python_does(text, one_line, expected):
    assert visible(text, one_line=one_line) == expected
    kept = "" if one_line else "\t"  # a text of lines keeps its tabs (Rich expands them to spaces)
    assert not [c for c in raw_controls(visible(text, one_line=one_line)) if c not in kept]


def test_visible_returns_clean_text_as_it_is():
    text = "scores = q @ k.transpose(-2, -1)  # (B, H, T, T)"
    assert visible(text) is text
    assert visible(Path("/tmp/x.py"), one_line=True) == "/tmp/x.py"


# --- the report, from a result built by hand -----------------------------------------------------


def forged() -> Result:
    """A failing result with the forge in every text an attempt can put words into."""
    return Result(
        exercise="mha",
        file=f"/tmp/attempts/mha{NAME_FORGE}.py",
        verdict=Verdict.ERROR,
        checks=(Check("contract", True, msg("mapping.by_shape", layer="q" + NAME_FORGE, role="q_proj")),
                Check("output", False, msg("cached_module.evidence_axis", step="step 2", name="k", dim=1, line=7, code="k = cat(k)  # " + FORGE, axis=2))),
        diagnoses=(Diagnosis("missing_scale", (msg("cached_module.evidence_product", line=9, code="q @ k  # " + FORGE, role="k_proj", shapes=FORGE),)),),
        mapping={"q_proj": "q" + NAME_FORGE, "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "o_proj"},
        mapping_notes=(MappingNote("zero_bias", "k_proj", "k" + NAME_FORGE),),
        error=ErrorInfo("exception", msg("error.raised", type="Err" + FORGE, text="boom\n" + FORGE, file=f"mha{NAME_FORGE}.py",
                                         line=22, function="forward", stage="forward", config=""),
                        f'  File "/tmp/mha.py", line 22, in forward\n    raise Err("boom")  # {FORGE}\nErr{FORGE}: boom{FORGE}\n'),
        divergence=Divergence(line=22, code=f"raise Err('boom')  # {FORGE}", name="q" + NAME_FORGE, shape=(3, 4), named="(B, T)",
                              reason="raised"),
        notes=(msg("note.header_disagrees", header="gqa" + FORGE, exercise="mha"),),
        stdout=f"hello{FORGE}\nworld\r\n",
        duration_s=0.5,
    )


def rendered(result: Result, *, full: bool, colours: bool, width: int = 80) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=colours, no_color=not colours, color_system="standard" if colours else None,
                      highlight=False, emoji=False)
    render_result(result, console, full=full)
    render_summary([result], console)
    console.print(verdict_line(result), no_wrap=True, overflow="ellipsis")
    return out.getvalue()


@pytest.mark.parametrize("full", [True, False], ids=["full", "compact"])
@pytest.mark.parametrize("colours", [False, True], ids=["plain", "colours"])
def test_a_forged_result_reaches_the_report_made_visible(full, colours):
    out = rendered(forged(), full=full, colours=colours, width=200)
    assert not raw_controls(out, colours=colours)
    if colours:  # every escape in a coloured report is one of Rich's colour codes
        assert all(SGR.match(out, m.start()) for m in re.finditer("\x1b", out))
    plain = SGR.sub("", out)
    assert "Err" + SHOWN in plain  # the exception's type name
    assert "boom" + SHOWN in plain  # its message (its last line in the traceback)
    assert f"raise Err('boom')  # {SHOWN}" in plain  # the quoted line of the divergence panel
    assert f'raise Err("boom")  # {SHOWN}' in plain  # the traceback's source line
    assert "hello" + SHOWN in plain  # the stdout panel
    assert f"mha{NAME_SHOWN}.py" in plain  # the file name
    assert f"k = cat(k)  # {SHOWN}" in plain  # a check's quoted line
    assert f"q @ k  # {SHOWN}" in plain  # the mistake's evidence
    if full:
        assert "your q" + NAME_SHOWN in plain  # the mapping panel's layer name
        assert "k" + NAME_SHOWN + " has no bias" in plain  # a mapping note
    assert "gqa" + SHOWN in plain  # the header note


def test_the_verdict_line_stays_one_line_whatever_the_message_holds():
    result = replace_diagnoses(forged())  # the reason is the error, not the named mistake
    line = verdict_line(result)
    assert "\n" not in line.plain and not raw_controls(line.plain)
    assert line.plain.startswith(f"✗ mha{NAME_SHOWN}.py  error — Err{SHOWN}: boom {SHOWN}")  # the message's lines joined


def test_json_keeps_the_attempts_text_as_it_was():
    doc = json.loads(json.dumps(wording.results_json([forged()])))  # valid JSON, read back
    (result,) = doc["results"]
    assert result["file"] == f"/tmp/attempts/mha{NAME_FORGE}.py"
    assert result["stdout"] == f"hello{FORGE}\nworld\r\n"
    assert result["error"]["message"].startswith("Err" + FORGE + ": boom\n" + FORGE)
    assert FORGE in result["error"]["traceback"]
    assert result["divergence"]["code"].endswith(FORGE)
    assert result["mapping"]["q_proj"] == "q" + NAME_FORGE
    assert FORGE in result["diagnoses"][0]["evidence"]


def test_the_drill_lines_show_the_forge_made_visible():
    from attnprep import drill

    result = replace_diagnoses(forged())  # the line says the error, and the traceback's last line
    out = io.StringIO()
    view = drill.PlainView(Console(file=out, width=80, no_color=True, force_terminal=False), budget_s=300)
    view.graded(12, result)
    line = drill.short_verdict(result).plain
    assert not raw_controls(out.getvalue()) and not raw_controls(line)
    assert f"error — Err{SHOWN}" in line
    where = drill.diagnosis_text(result)
    assert where is not None and where.plain == f"Err{SHOWN}: boom{SHOWN}"  # the traceback's last line


def replace_diagnoses(result: Result) -> Result:
    from dataclasses import replace

    return replace(result, diagnoses=())


def test_the_interview_lines_show_the_forge_made_visible(tmp_path):
    from attnprep.interview import ConsoleView

    out = io.StringIO()
    view = ConsoleView(Console(file=out, width=80, no_color=True, force_terminal=False), budget_s=600)
    view.graded(100, forged(), first=True)
    view.not_graded("Err" + FORGE, internal=True)
    text = out.getvalue()
    assert not raw_controls(text)
    assert " ".join(("Err" + SHOWN).split()) in " ".join(text.split())  # wrapped at the console's width


# --- real attempts, graded: `attnprep check` and `pytest --attnprep` in their own processes ------

RAISES = '''# attnprep: mha
import torch
import torch.nn as nn

FORGE = {forge!r}
Err = type("Err" + FORGE, (Exception,), {{}})


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        print("hello" + FORGE)
        raise Err("boom" + FORGE)  # {comment}
'''

MAPPED = '''# attnprep: mha
import torch
import torch.nn as nn
import torch.nn.functional as F

NAME_FORGE = {name_forge!r}


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        for name in ("a", "b", "c", "d"):
            self.add_module(name + NAME_FORGE, nn.Linear(d_model, d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.h, C // self.h
        a, b, c, d = self._modules.values()
        q = a(x).view(B, T, H, D).transpose(1, 2)
        k = b(x).view(B, T, H, D).transpose(1, 2)
        v = c(x).view(B, T, H, D).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)  # {comment}
        if is_causal:
            scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        out = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return d(out)
'''

# A raw escape is allowed in a comment (not a carriage return: it would end the line).
COMMENT = "\x1b[2J\x1b[H\x1b[32m✓ mha.py passed\x1b[0m\x1b]0;owned\x07\u202e"
COMMENT_SHOWN = "\\x1b[2J\\x1b[H\\x1b[32m✓ mha.py passed\\x1b[0m\\x1b]0;owned\\x07\\u202e"
ID_FORGE = "\x1b[2J\x1b[H\x1b[32m✓\x1b[0m\x07\u202e"  # no space: all of it is the header's id
ID_SHOWN = "\\x1b[2J\\x1b[H\\x1b[32m✓\\x1b[0m\\x07\\u202e"
MESSAGE_SHOWN = SHOWN.split("\\r")[0]  # the grader keeps an exception message's first line: up to the \r
RAISES_NAME = f"raises{NAME_FORGE}.py"
RAISES_SHOWN = f"raises{NAME_SHOWN}.py"


@pytest.fixture(scope="module")
def attempts(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("forged")
    (folder / RAISES_NAME).write_text(RAISES.format(forge=FORGE, comment=COMMENT), encoding="utf-8")
    (folder / "mapped.py").write_text(MAPPED.format(name_forge=NAME_FORGE, comment=COMMENT), encoding="utf-8")
    (folder / "unknown.py").write_text(f"# attnprep: mha{ID_FORGE}\n", encoding="utf-8")
    return folder


def run(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ATTNPREP_HOME": str(home), "ATTNPREP_LANG": "en", "NO_COLOR": "1", "COLUMNS": "300",
                               "CI": "true"})  # pytest untrimmed, as in a CI: each text said once all the same


@pytest.mark.slow
def test_check_shows_a_forging_attempt_made_visible_and_json_keeps_it(attempts, attnprep_home):
    proc = run(["-m", "attnprep", "check", RAISES_NAME, "mapped.py", "unknown.py", "-e", "mha"], attempts, attnprep_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert not raw_controls(out) and not raw_controls(proc.stderr), [line for line in out.splitlines() if raw_controls(line)]
    assert "Err" + SHOWN + ": boom" + MESSAGE_SHOWN in out  # the exception's type name and message (one line: to the \r)
    assert "hello" + SHOWN in out  # the stdout panel
    assert out.count(f"# {COMMENT_SHOWN}") == 3  # the quoted lines: the traceback's, both divergence panels'
    assert RAISES_SHOWN in out  # the file name
    assert f"header says `# attnprep: mha{ID_SHOWN}`" in out
    assert "your a" + NAME_SHOWN in out  # the layer names of the mapping panel

    # the JSON document is text for a program, not for a terminal: the app in this process (typer's
    # CliRunner, the same environment and folder) writes the same one without torch's import again
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401  (registers the commands on the app)
    from attnprep.app import app

    env = {"ATTNPREP_HOME": str(attnprep_home), "ATTNPREP_LANG": "en", "NO_COLOR": "1", "COLUMNS": "300", "CI": "true"}
    with contextlib.chdir(attempts):
        done = CliRunner().invoke(app, ["check", RAISES_NAME, "-e", "mha", "--json"], env=env, catch_exceptions=False)
    assert done.exit_code == 1, done.output
    doc = json.loads(done.stdout)
    (result,) = doc["results"]
    assert result["stdout"] == f"hello{FORGE}\n"
    assert result["error"]["message"].startswith("Err" + FORGE)
    assert result["file"].endswith(RAISES_NAME)


@pytest.mark.slow
def test_pytest_shows_a_forging_attempt_made_visible(attempts, attnprep_home, run_pytest_here):
    """-v: the whole report (the compact one is a part of it), pytest's own lines naming each item.
    pytest in this process (``run_pytest_here``, tests/conftest.py): what it prints does not depend on
    the process, and `check` above already runs in its own."""
    proc = run_pytest_here(attempts, attnprep_home, "-p", "no:benchmark", "--attnprep", "-v", "-rA",
                       env={"ATTNPREP_LANG": "en", "COLUMNS": "300"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "3 failed" in proc.stdout, out
    assert not raw_controls(out), [line for line in out.splitlines() if raw_controls(line)]
    assert RAISES_SHOWN in out  # pytest's own lines name the file by its node id
    assert "Err" + SHOWN + ": boom" + MESSAGE_SHOWN in out
    assert f"unknown.py::mha{ID_SHOWN}" in out and f"unknown exercise 'mha{ID_SHOWN}'" in out
    assert "your a" + NAME_SHOWN in out  # the mapping panel
    assert out.count(f"# {COMMENT_SHOWN}") == 3  # the quoted lines: the traceback's, both divergence panels'


def test_a_usage_error_quoting_a_file_name_shows_its_control_characters(tmp_path, attnprep_home):
    name = f"notes{NAME_FORGE}.py"
    (tmp_path / name).write_text("x = 1\n", encoding="utf-8")  # no header: the error names the file
    proc = run(["-m", "attnprep", "check", name], tmp_path, attnprep_home)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert not raw_controls(proc.stderr) and f"notes{NAME_SHOWN}.py" in proc.stderr


def test_a_file_name_that_is_not_utf8_is_graded_shown_and_recorded(tmp_path, attnprep_home):
    """Python keeps the byte 0xFF of such a name as the lone surrogate U+DCFF, which no terminal
    (and no SQLite text) takes: shown and stored as ``\\udcff``, never an internal error."""
    name = os.fsdecode(b"mha\xff.py")
    (tmp_path / name).write_text("# attnprep: mha\nx = 1\n", encoding="utf-8")
    proc = run(["-m", "attnprep", "check"], tmp_path, attnprep_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mha\\udcff.py  contract" in proc.stdout and not proc.stderr
    from attnprep import history

    assert [Path(r.file).name for r in history.runs()] == ["mha\\udcff.py"]

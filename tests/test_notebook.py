"""Grading from a notebook (issue 28). In a real kernel: nbclient, Jupyter's standard executor,
runs one notebook through the magics and ``attnprep.check``; a kernel driven by jupyter_client
checks the stub handed to the next cell and Ctrl-C during a hung check. Those need the
``notebook`` extra (``pip install -e '.[test,notebook]'``, what CI installs) and are skipped
without it; two kernels in all. Then ``attnprep.check`` from plain Python, which needs nothing.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

import attnprep
from attnprep import exercises, notebook, texts

MHA = Path(__file__).parent / "corpus" / "mha"
FAILING = (MHA / "missing_scale.py").read_text(encoding="utf-8")
PASSING = (MHA / "ok_textbook.py").read_text(encoding="utf-8")
HANGING = """import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        while True:
            pass
"""
ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLOUR = re.compile(r"(?<![-\w])color: (#[0-9a-f]{6})")

# The notebook, cell by cell (name, source); a name says what the tests read in its outputs.
CELLS = [
    ("load", "%load_ext attnprep"),
    ("kernel", "import os\nKERNEL = os.getpid()"),
    ("fails", "%%attnprep check mha\n" + FAILING),
    ("passes", "%%attnprep check mha\n" + PASSING),
    ("hangs", "%%attnprep check mha --timeout 2\n" + HANGING),
    ("alive", "print(os.getpid() == KERNEL, 'MultiHeadAttention' in globals())"),
    # what attnprep.check("mha") reads from the notebook: imports, a constant, a helper, the class
    ("imports", "import math\nimport torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
                "x = torch.randn(2, 3)  # a global named like forward's argument: not part of the attempt\n"
                "NEG = float('-inf')\nunused = [1, 2]"),
    ("helper", "def split_heads(t, h):\n    B, T, C = t.shape\n    return t.view(B, T, h, C // h).transpose(1, 2)  # (B, H, T, D)"),
    ("define", '''class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        os.environ["MHA_BUILT_IN"] = str(os.getpid())  # where the grading builds it
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (split_heads(p(x), self.h) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)  # (B, H, T, T)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], NEG)
        if is_causal:
            allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~allowed, NEG)
        attn = self.dropout(F.softmax(scores, dim=-1))
        return self.o_proj((attn @ v).transpose(1, 2).reshape(B, T, C))'''),
    # the notebook's own torch work on two threads (the OpenMP pool started) before the next check forks
    ("threads", "torch.set_num_threads(2)\nfloat((torch.randn(256, 256) @ torch.randn(256, 256)).sum() * 0)"),
    ("check_defined", "import attnprep\nresult = attnprep.check('mha')\nresult"),
    ("after", "print(result.passed, result.verdict, result.result.file, os.environ.get('MHA_BUILT_IN'), torch.get_num_threads())"),
    ("new", "%attnprep new mha"),
    ("unknown", "%attnprep check nosuch"),
    ("usage", "%attnprep frobnicate"),
    ("api_unknown", "attnprep.check('nosuch')"),
    ("no_color", "os.environ['NO_COLOR'] = '1'"),
    ("fails_no_color", "%%attnprep check mha\n" + FAILING),
]
NUMBER = {name: i + 1 for i, (name, _) in enumerate(CELLS)}  # In [n] of each cell, run top to bottom


def kernel_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(ATTNPREP_HOME=str(home), ATTNPREP_LANG="en")
    return env


@pytest.fixture(scope="module")
def executed(tmp_path_factory, once):
    """The notebook, executed once for the test run by nbclient in one kernel (``once``: whichever
    worker asks first): {name: cell} and the data folder."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    def execute():
        home = tmp_path_factory.mktemp("notebook-home")
        work = tmp_path_factory.mktemp("notebook-work")
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for _, source in CELLS])
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                         resources={"metadata": {"path": str(work)}})
        client.execute(env=kernel_env(home))
        return {name: cell for (name, _), cell in zip(CELLS, nb.cells)}, home

    return once("the notebook, executed", execute)


def outputs(cell, kind: str) -> list[dict]:
    return [o for o in cell.outputs if o.output_type == kind]


def report_text(cell) -> str:
    """The report's plain-text view (what a frontend without HTML shows), colours stripped."""
    (display,) = outputs(cell, "display_data")
    return ANSI.sub("", display.data["text/plain"])


def value(cell) -> str:
    (result,) = outputs(cell, "execute_result")
    return result.data["text/plain"]


def test_no_cell_raised(executed):
    cells, _ = executed
    raised = {name: [o.ename for o in outputs(cell, "error")] for name, cell in cells.items() if outputs(cell, "error")}
    assert raised == {"api_unknown": ["NotebookError"]}


def test_a_failing_cell_shows_the_named_mistake_and_gives_its_verdict(executed):
    cells, _ = executed
    cell = cells["fails"]
    text = report_text(cell)
    title = texts.t("verdict.wrong_output", "en")
    assert f"✗ In [{NUMBER['fails']}]  {title}" in text.splitlines()[0]
    assert "missing 1/sqrt(d) scale" in text and "mistake" in text and "where it first goes wrong" in text
    assert value(cell) == "Checked(exercise='mha', verdict='wrong_output', passed=False, mistakes=('missing_scale',))"
    html = outputs(cell, "display_data")[0].data["text/html"]
    assert "missing 1/sqrt(d) scale" in html and "color:" in html  # Rich's notebook output, in colour
    # the line it names is the cell's line (the magic's line is line 1), as the notebook numbers it
    (number,) = re.findall(r"│ line (\d+): ", text)
    (shown,) = re.findall(rf"│ +{number} (.+?) *│", text)
    assert cell.source.splitlines()[int(number) - 1].strip().startswith(shown.strip())


def test_a_passing_cell_passes(executed):
    cells, _ = executed
    text = report_text(cells["passes"])
    assert text.startswith(f"✓ In [{NUMBER['passes']}]  passed")
    assert "48/48 cases match the reference" in text
    assert value(cells["passes"]) == "Checked(exercise='mha', verdict='passed', passed=True, mistakes=())"


def test_a_hung_cell_times_out_and_the_kernel_lives_on(executed):
    cells, _ = executed
    text = report_text(cells["hangs"])
    assert "timeout" in text.splitlines()[0] and "after 2 s" in text
    assert "verdict='timeout'" in value(cells["hangs"])
    # the same kernel process runs the next cell, and no graded cell was run in it
    assert "".join(o.text for o in outputs(cells["alive"], "stream")) == "True False\n"  # a print may come in several stream messages


def test_check_grades_what_the_notebook_defined_in_a_child(executed):
    cells, _ = executed
    text = report_text(cells["check_defined"])
    assert text.startswith(f"✓ In [{NUMBER['define']}]  passed"), text[:300]
    assert value(cells["check_defined"]) == "Checked(exercise='mha', verdict='passed', passed=True, mistakes=())"
    # built in the grading child only: the kernel's environment never saw the class's constructor
    # run; and the kernel has its two threads back
    assert "".join(o.text for o in outputs(cells["after"], "stream")) == f"True passed In [{NUMBER['define']}] None 2\n"  # a print may come in several stream messages


def test_new_says_the_stub_is_in_the_next_cell(executed):
    cells, _ = executed
    assert "".join(o.text for o in outputs(cells["new"], "stream")) == texts.t("notebook.new_next", "en", id="mha") + "\n"  # a print may come in several stream messages


def test_bad_input_is_one_line_on_stderr(executed):
    cells, _ = executed
    for name in ("unknown", "usage"):
        (stream,) = outputs(cells[name], "stream")
        assert stream.name == "stderr" and stream.text.count("\n") == 1, stream.text
        assert stream.text.startswith(texts.t("sys.error_prefix", "en"))
    assert "nosuch" in cells["unknown"].outputs[0].text
    assert cells["usage"].outputs[0].text.endswith(texts.t("notebook.usage", "en") + "\n")
    # the Python API raises, and IPython shows the one sentence instead of a traceback
    (error,) = outputs(cells["api_unknown"], "error")
    assert len(error.traceback) == 1 and error.traceback[0].startswith(texts.t("sys.error_prefix", "en"))
    assert "nosuch" in error.traceback[0] and "\n" not in error.traceback[0]


def test_no_color_is_honoured(executed):
    cells, _ = executed
    coloured = outputs(cells["fails"], "display_data")[0].data["text/html"]
    html = outputs(cells["fails_no_color"], "display_data")[0].data["text/html"]
    assert "missing 1/sqrt(d) scale" in html
    # the red, green and magenta are gone; Rich's HTML draws the dim attribute in grey
    assert {"#800000", "#008000", "#800080"} <= set(COLOUR.findall(coloured))
    assert set(COLOUR.findall(html)) <= {"#7f7f7f"}
    # the plain text keeps bold and dim (as a terminal does under NO_COLOR), no colour code
    attributes = {"0", "1", "2", "3", "4"}
    assert not sgr_codes(outputs(cells["fails"], "display_data")[0].data["text/plain"]) <= attributes
    assert sgr_codes(outputs(cells["fails_no_color"], "display_data")[0].data["text/plain"]) <= attributes


def sgr_codes(text: str) -> set[str]:
    return {code for codes in re.findall(r"\x1b\[([0-9;]*)m", text) for code in codes.split(";")}


def test_runs_are_recorded_in_the_history_like_check(executed):
    _, home = executed
    with sqlite3.connect(home / "history.sqlite3") as db:
        rows = db.execute("SELECT exercise, file, kind, verdict FROM runs ORDER BY id").fetchall()
    assert rows == [
        ("mha", f"In [{NUMBER['fails']}]", "check", "wrong_output"),
        ("mha", f"In [{NUMBER['passes']}]", "check", "passed"),
        ("mha", f"In [{NUMBER['hangs']}]", "check", "timeout"),
        ("mha", f"In [{NUMBER['define']}]", "check", "passed"),
        ("mha", f"In [{NUMBER['fails_no_color']}]", "check", "wrong_output"),
    ]


# --- a kernel driven message by message: the next cell's stub, Ctrl-C -------------------------


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _run(kc, code: str, timeout: float = 120) -> tuple[dict, str, str]:
    """Execute ``code``; its reply, what it printed (stdout + stderr) and its value's text."""
    msg_id = kc.execute(code)
    return _finish(kc, msg_id, timeout)


def _finish(kc, msg_id: str, timeout: float) -> tuple[dict, str, str]:
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:  # e.g. the kernel_info reply of the start
        reply = kc.get_shell_msg(timeout=timeout)
    printed, shown = "", ""
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        content = msg["content"]
        if msg["msg_type"] == "stream":
            printed += content["text"]
        elif msg["msg_type"] in ("execute_result", "display_data"):
            shown += ANSI.sub("", content["data"].get("text/plain", "")) + "\n"
        elif msg["msg_type"] == "status" and content["execution_state"] == "idle":
            return reply, printed, shown


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the kernel's children from /proc")
def test_the_stub_goes_to_the_next_cell_and_ctrl_c_stops_a_hung_check(tmp_path):
    pytest.importorskip("ipykernel")
    start_new_kernel = pytest.importorskip("jupyter_client.manager").start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", env=kernel_env(tmp_path / "home"), cwd=str(tmp_path))
    try:
        reply, _, shown = _run(kc, "%load_ext attnprep\nimport os\nos.getpid()")
        kernel = int(shown.strip())
        # `%attnprep new`: the stub under the cell magic, as the next cell (IPython's set_next_input)
        reply, printed, _ = _run(kc, "%attnprep new mha")
        (payload,) = reply["content"]["payload"]
        assert payload["source"] == "set_next_input" and payload["replace"] is False
        stub = payload["text"]
        assert stub.startswith("%%attnprep check mha\n") and "class MultiHeadAttention" in stub
        # run untouched, that next cell is graded as the blank stub
        _, _, shown = _run(kc, stub)
        assert "nothing written yet" in shown and "verdict='error'" in shown

        # Ctrl-C while the child hangs (its own time limit is a minute away)
        msg_id = kc.execute("%%attnprep check mha --timeout 60\n" + HANGING)
        deadline = time.monotonic() + 60
        while not _children(kernel):
            assert time.monotonic() < deadline, "the grading child never started"
            time.sleep(0.1)
        time.sleep(0.5)
        interrupted = time.monotonic()
        km.interrupt_kernel()
        reply, printed, shown = _finish(kc, msg_id, timeout=30)
        assert time.monotonic() - interrupted < 10
        assert reply["content"]["status"] == "ok"  # back at the prompt, without a traceback
        assert printed == texts.t("sys.interrupted", "en") + "\n" and shown == ""
        assert _children(kernel) == []  # the child and its tree are gone
        reply, _, shown = _run(kc, "os.getpid()")
        assert reply["content"]["status"] == "ok" and int(shown.strip()) == kernel
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# --- attnprep.check from plain Python ------------------------------------------------------------

SCRIPT_DEFINITIONS = """import math
import os
import torch
from torch import nn
import torch.nn.functional as F
import attnprep

x = torch.randn(2, 3)  # a global named like forward's argument
NEG = float("-inf")
unused = [1, 2]


def split_heads(t, h):
    B, T, C = t.shape
    return t.view(B, T, h, C // h).transpose(1, 2)  # (B, H, T, D)


""" + dict(CELLS)["define"] + "\n"


def test_defined_source_takes_what_the_definitions_use_and_nothing_else(tmp_path):
    import runpy

    script = tmp_path / "practice.py"
    script.write_text(SCRIPT_DEFINITIONS, encoding="utf-8")
    namespace = runpy.run_path(str(script))  # functions and methods keep the file as their source
    source, label = notebook.defined_source(exercises.get("mha"), namespace)
    head, _ = source.split("\n\n", 1)
    # the imports the class and its helper read, as the file wrote them, then the constant, the
    # helper and the class
    assert sorted(head.splitlines()) == ["from torch import nn", "import math", "import os", "import torch", "import torch.nn.functional as F"]
    assert source.index('NEG = float("-inf")') < source.index("def split_heads") < source.index("class MultiHeadAttention")
    assert "unused" not in source and "x = torch" not in source and "import attnprep" not in source
    assert label == texts.t("notebook.kernel", names="MultiHeadAttention")
    compile(source, "<graded>", "exec")


def test_a_missing_definition_is_one_sentence():
    with pytest.raises(notebook.NotebookError) as raised:
        attnprep.check("mha", namespace={})
    assert str(raised.value) == texts.t("notebook.not_defined", name="MultiHeadAttention", file="mha.py")
    assert raised.value._render_traceback_() == [texts.t("sys.error_prefix") + str(raised.value)]
    with pytest.raises(notebook.NotebookError, match="nosuch"):
        attnprep.check("nosuch")
    with pytest.raises(notebook.NotebookError, match="missing.py"):
        attnprep.check("missing.py")
    with pytest.raises(notebook.NotebookError) as raised:
        attnprep.check(FAILING.replace("# attnprep: mha", ""))
    assert str(raised.value) == texts.t("notebook.which_exercise")


def test_check_grades_source_a_file_and_a_script_s_own_class(tmp_path, attnprep_home):
    import subprocess
    import sys

    failing = attnprep.check(FAILING, show=False)  # the header names the exercise
    assert (failing.exercise, failing.verdict, failing.passed, failing.mistakes) == ("mha", "wrong_output", False, ("missing_scale",))
    assert not failing and failing.result.file == "<string>"
    path = tmp_path / "attempt.py"
    path.write_text(PASSING, encoding="utf-8")
    passing = attnprep.check(path, show=False)
    assert passing.passed and passing.result.file == str(path.resolve())
    # a script calling attnprep.check("mha") on its own class: graded in the child, report shown
    script = tmp_path / "practice.py"
    script.write_text(SCRIPT_DEFINITIONS + "print(repr(attnprep.check('mha')), os.environ.get('MHA_BUILT_IN'))\n", encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "ATTNPREP_LANG": "en", "COLUMNS": "100"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("✓ MultiHeadAttention of the notebook  passed")
    assert run.stdout.rstrip().endswith("Checked(exercise='mha', verdict='passed', passed=True, mistakes=()) None")
    with sqlite3.connect(attnprep_home / "history.sqlite3") as db:
        rows = db.execute("SELECT file, verdict FROM runs ORDER BY id").fetchall()
    assert rows == [("<string>", "wrong_output"), (str(path.resolve()), "passed"), ("MultiHeadAttention of the notebook", "passed")]

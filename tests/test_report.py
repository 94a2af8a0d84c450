"""The Rich report of `attnprep check`: Result values built by hand, rendered at 80 columns,
asserted on the exported text (what a user reads), not on internals."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from rich.cells import cell_len
from rich.console import Console, Group

from attnprep.grader.result import Check, Diagnosis, ErrorInfo, Heatmap, Result, ShapeRow, Verdict
from attnprep.report import leaks, render_result, render_summary, verdict_line

ANSI = re.compile(r"\x1b\[")
BOX = str.maketrans({c: " " for c in "│╭╮╰╯─"})

GQA_TITLE = "GQA heads tiled (repeat) instead of grouped (repeat_interleave)"
GQA_FIX = "k = k.repeat_interleave(num_heads // num_kv_heads, dim=1) (or Llama's repeat_kv / expand + reshape)."
GQA_WHY = (
    "Query head h must use KV head h // (num_heads // num_kv_heads): consecutive query heads share a KV "
    "head. repeat() tiles [0,1,0,1], pairing most query heads with the wrong KV head."
)


# --- values ----------------------------------------------------------------------------------------


def causal_heatmap(t: int, *, leak: tuple[int, int, float] | None = None, got: bool = True) -> Heatmap:
    """Expected causal attention (uniform over j <= i); `got` equal to it, plus an optional leak."""
    allowed = [[j <= i for j in range(t)] for i in range(t)]
    expected = [[1 / (i + 1) if j <= i else 0.0 for j in range(t)] for i in range(t)]
    observed = [row[:] for row in expected]
    if leak is not None:
        qi, kj, mass = leak
        observed[qi] = [p * (1 - mass) for p in observed[qi]]
        observed[qi][kj] = mass
    return Heatmap("sample 0, head 1", expected, observed if got else None, allowed)


def passed() -> Result:
    return Result(
        exercise="mha",
        file="mha.py",
        verdict=Verdict.PASSED,
        checks=(Check("output", True, "max abs err 2.4e-07"), Check("causality", True)),
        row_sums=(0.9999998, 1.0000001),
        duration_s=0.21,
    )


def wrong_output() -> Result:
    return Result(
        exercise="gqa",
        file="gqa.py",
        verdict=Verdict.WRONG_OUTPUT,
        checks=(
            Check("output", False, "max abs err 0.41 at (0, 3, 17); 812 / 1792 mismatched"),
            Check("padding", True, "padded keys get no attention"),
            Check("gradients", None, "skipped: output already wrong"),
        ),
        diagnoses=(
            Diagnosis(
                "gqa_heads_tiled", GQA_TITLE, GQA_WHY, GQA_FIX, evidence="outputs match the variant 'repeat' to 3e-07"
            ),
        ),
        mapping={"q_proj": "wq", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "o_proj"},
        mapping_notes=("took layer 'wq' for q_proj (by shape)",),
        shapes=(
            ShapeRow("q", "(2, 4, 7, 8)", "(2, 4, 7, 8)"),
            ShapeRow("k", "(2, 2, 7, 8)", "(2, 4, 7, 9)"),
            ShapeRow("attn", "(2, 4, 7, 7)", ""),
        ),
        heatmap=causal_heatmap(6, leak=(2, 3, 0.2)),
        row_sums=(0.9999999, 1.0000002),
        output_diff=(
            "Mismatched elements: 812 / 1792 (45.3%)\n"
            "Greatest absolute difference: 0.41 at index (0, 3, 17) (up to 1e-05 allowed)"
        ),
        duration_s=0.34,
    )


TRACEBACK = """Traceback (most recent call last):
  File "/home/u/prep/mha.py", line 41, in forward
    scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
RuntimeError: The size of tensor a (16) must match the size of tensor b (8) at non-singleton dimension 3"""


def error() -> Result:
    return Result(
        exercise="mha",
        file="mha.py",
        verdict=Verdict.ERROR,
        error=ErrorInfo(
            "exception",
            "RuntimeError: The size of tensor a (16) must match the size of tensor b (8) [red]x[/red]",
            TRACEBACK,
        ),
        duration_s=0.4,
    )


def timeout() -> Result:
    return Result("mha", "mha.py", Verdict.TIMEOUT, error=ErrorInfo("timeout", "no result after 10.0 s"), duration_s=10.02)


def internal() -> Result:
    return Result(
        "mha",
        "mha.py",
        Verdict.ERROR,
        error=ErrorInfo("internal", "KeyError: 'q_proj'", 'Traceback (most recent call last):\nKeyError: \'q_proj\''),
        internal=True,
    )


def contract() -> Result:
    return Result(
        "mha",
        "mha.py",
        Verdict.CONTRACT,
        checks=(Check("contract", False, "class MultiHeadAttention not found (defined: MHA)"),),
        duration_s=0.05,
    )


ALL = {
    "passed": passed,
    "wrong_output": wrong_output,
    "error": error,
    "timeout": timeout,
    "internal": internal,
    "contract": contract,
}


# --- rendering helpers ----------------------------------------------------------------------------


def render(result: Result, *, width: int = 80, full: bool = True, color: str | None = None) -> str:
    console = Console(record=True, width=width, color_system=color, file=io.StringIO())
    render_result(result, console, full=full)
    return console.export_text()


def raw(result: Result, *, color: str | None) -> str:
    """What actually reaches the terminal (with escape codes if any)."""
    out = io.StringIO()
    render_result(result, Console(width=80, color_system=color, file=out, force_terminal=color is not None), full=True)
    return out.getvalue()


def flat(text: str) -> str:
    """Panel borders removed and whitespace collapsed, so wrapped sentences compare as one line."""
    return " ".join(text.translate(BOX).split())


def lines_with(text: str, *needles: str) -> list[str]:
    return [line for line in text.splitlines() if all(n in line for n in needles)]


def cell(line: str, header: str, grid: int, key: int) -> str:
    """The 2-column cell of `key` in grid 0 (expected) or 1 (your attempt), located by the column
    header of key indices above the grids."""
    starts = [m.start() for m in re.finditer(r"0 1 2", header)]
    digit = starts[grid]  # the key-0 digit is right-aligned in its 2-column cell
    return line[digit - 1 + 2 * key : digit + 1 + 2 * key]


# --- verdict line ---------------------------------------------------------------------------------


def test_verdict_line_passed_and_failed():
    assert verdict_line(passed()).plain == "✓ mha.py  passed in 0.21 s"
    assert verdict_line(wrong_output()).plain == f"✗ gqa.py  wrong output — {GQA_TITLE}"
    assert verdict_line(error()).plain.startswith("✗ mha.py  error — RuntimeError: The size of tensor a (16)")
    assert verdict_line(timeout()).plain == "✗ mha.py  timeout — no result after 10.0 s"
    assert verdict_line(contract()).plain == "✗ mha.py  contract — class MultiHeadAttention not found (defined: MHA)"
    assert verdict_line(internal()).plain.startswith("! mha.py  not judged — attnprep internal error")


def test_verdict_line_styles_follow_the_verdict():
    def styles(text):
        return {str(span.style) for span in text.spans}

    assert "bold green" in styles(verdict_line(passed()))
    assert "bold red" not in styles(verdict_line(passed()))
    assert "bold red" in styles(verdict_line(wrong_output()))
    assert "bold yellow" in styles(verdict_line(internal()))


def test_verdict_line_stays_one_line_in_a_live_display():
    console = Console(record=True, width=40, color_system=None, file=io.StringIO())
    console.print(Group(verdict_line(wrong_output())))
    text = console.export_text().rstrip("\n")
    assert "\n" not in text
    assert text.startswith("✗ gqa.py  wrong output — GQA")
    assert text.endswith("…")


# --- the full report --------------------------------------------------------------------------------


def test_passed_report_is_short_and_has_no_pointers():
    text = render(passed())
    assert text.splitlines()[0] == "✓ mha.py  passed in 0.21 s"
    assert "exercise mha" in text and "mha.py" in text
    assert "attnprep hint" not in text and "attnprep solution" not in text
    assert "mistake" not in text and "error" not in text
    assert lines_with(text, "softmax row sums", "✓")


def test_wrong_output_report_names_the_mistake_with_why_and_fix():
    text = render(wrong_output())
    assert text.splitlines()[0].startswith("✗ gqa.py  wrong output — GQA heads tiled")
    body = flat(text)
    assert GQA_TITLE in body
    assert f"why {GQA_WHY}" in body
    assert f"fix {GQA_FIX}" in body
    assert "evidence: outputs match the variant 'repeat' to 3e-07" in body


def test_wrong_output_report_sections_come_in_reading_order():
    text = render(wrong_output())
    order = [
        "✗ gqa.py",
        GQA_TITLE.split()[0] + " heads tiled",  # the diagnosis panel
        "checks (1 failed)",
        "shapes (1 mismatch)",
        "attention: sample 0, head 1",
        "softmax row sums",
        "output vs reference",
        "weight mapping (not by name)",
        "attnprep hint gqa",
    ]
    positions = [text.index(marker, 1 if i == 1 else 0) for i, marker in enumerate(order)]
    assert positions == sorted(positions), list(zip(order, positions))


def test_checks_table_marks_failed_passed_and_not_applicable():
    text = render(wrong_output())
    assert lines_with(text, "output", "✗", "max abs err 0.41")
    assert lines_with(text, "padding", "✓", "padded keys get no attention")
    assert lines_with(text, "gradients", "–", "skipped: output already wrong")
    assert not lines_with(text, "padding", "✗")


def test_failed_check_row_is_highlighted_red():
    out = raw(wrong_output(), color="truecolor")
    red = "\x1b[31m"  # the row style, not the panel border: the code right before the detail text
    assert re.search(re.escape(red) + r"[^\x1b]*max abs err 0\.41", out)
    assert not re.search(re.escape(red) + r"[^\x1b]*padded keys get no attention", out)


def test_shape_mismatch_row_is_present_and_marked():
    text = render(wrong_output())
    (bad,) = lines_with(text, "(2, 2, 7, 8)")
    assert "(2, 4, 7, 9)" in bad and "✗" in bad and bad.split("│")[1].split()[0] == "k"
    (good,) = lines_with(text, "(2, 4, 7, 8)", "✓")
    assert good.split("│")[1].split()[0] == "q"
    assert lines_with(text, "attn", "(not observed)")


def test_heatmap_marks_the_leaked_cell_and_only_it():
    text = render(wrong_output())
    header = next(line for line in text.splitlines() if line.count("0 1 2 3 4 5") == 2)
    rows = {int(line.split()[1]): line for line in text.splitlines() if re.match(r"│\s+\d+ ", line)}
    assert sorted(rows) == list(range(6))
    assert cell(rows[2], header, grid=1, key=3) == "××"  # query 2 puts 0.2 on future key 3
    assert cell(rows[2], header, grid=0, key=3) == " ·"  # the reference masks it
    assert cell(rows[2], header, grid=1, key=4) == " ·"  # masked, no mass: not a leak
    assert cell(rows[0], header, grid=0, key=0) == "██"  # query 0 attends only to itself
    leaked = [(i, j) for i, line in rows.items() for j in range(6) if cell(line, header, 1, j) == "××"]
    assert leaked == [(2, 3)]
    body = flat(text)
    assert "leaked mass: 1 masked cell with p > 0.01, q2→k3 0.20" in body
    assert "××=leak" in body and "·=masked" in body and "rows=queries cols=keys" in body


def test_mass_under_the_threshold_is_not_a_leak():
    result = Result("causal", "causal.py", Verdict.WRONG_OUTPUT, heatmap=causal_heatmap(5, leak=(1, 4, 0.005)))
    assert leaks(result.heatmap) == []
    text = render(result)
    assert "××" not in text and "leaked" not in text
    assert leaks(causal_heatmap(5, leak=(1, 4, 0.02))) == [(1, 4, 0.02)]


def test_big_heatmap_is_truncated_with_a_note_and_fits():
    result = Result("causal", "causal.py", Verdict.MASK_LEAK, heatmap=causal_heatmap(16, leak=(14, 15, 0.5)))
    text = render(result)
    assert "showing queries and keys 0–11 of 16" in text
    assert not lines_with(text, "│ 12 ")
    # the leak is outside the window but still reported
    assert "q14→k15 0.50" in flat(text)
    assert max(cell_len(line) for line in text.splitlines()) <= 80


def test_heatmap_shrinks_on_a_narrow_console():
    text = render(Result("causal", "causal.py", Verdict.MASK_LEAK, heatmap=causal_heatmap(12)), width=50)
    assert "showing queries and keys" in text
    assert max(cell_len(line) for line in text.splitlines()) <= 50


def test_padded_query_rows_are_drawn_as_not_graded_and_never_leak():
    """Rows of padded queries are not graded (SPEC §1): whatever the attempt holds there (NaN from
    masking the queries, mass on padded keys) is drawn as '-' and is no leak; a real row still is."""
    t, length = 5, 3
    allowed = [[j < length for j in range(t)] for _ in range(t)]
    expected = [[1 / length if j < length else 0.0 for j in range(t)] for _ in range(t)]
    got = [[float("nan")] * t if i >= length else [0.25, 0.25, 0.25, 0.25, 0.0] for i in range(t)]
    heatmap = Heatmap("sample 2, head 1, padded", expected, got, allowed, graded=[i < length for i in range(t)])
    assert leaks(heatmap) == [(0, 3, 0.25), (1, 3, 0.25), (2, 3, 0.25)]
    text = render(Result("mha", "mha.py", Verdict.MASK_LEAK, heatmap=heatmap))
    header = next(line for line in text.splitlines() if line.count("0 1 2 3 4") == 2)
    rows = {int(line.split()[1]): line for line in text.splitlines() if re.match(r"│\s+\d+ ", line)}
    for i in (3, 4):
        assert [cell(rows[i], header, grid, j) for grid in (0, 1) for j in range(t)] == [" -"] * (2 * t)
    assert cell(rows[0], header, grid=1, key=3) == "××"
    body = flat(text)
    assert "-=padded query (not graded)" in body and "??" not in text
    assert "leaked mass: 3 masked cells" in body


def test_heatmap_without_observed_attention():
    text = render(Result("mha", "mha.py", Verdict.WRONG_OUTPUT, heatmap=causal_heatmap(4, got=False)))
    assert lines_with(text, "expected", "your attempt")
    assert "(not observed)" in text
    assert "××" not in text


def test_row_sums_outside_tolerance_fail():
    text = render(Result("mha", "mha.py", Verdict.WRONG_OUTPUT, row_sums=(0.25, 4.0)))
    (line,) = lines_with(text, "softmax row sums")
    assert "min 0.250000" in line and "max 4.000000" in line and "✗" in line
    assert "✓" not in line
    nan = render(Result("mha", "mha.py", Verdict.WRONG_OUTPUT, row_sums=(float("nan"), 1.0)))
    assert "✗" in lines_with(nan, "softmax row sums")[0]
    edge = render(Result("mha", "mha.py", Verdict.WRONG_OUTPUT, row_sums=(1 - 5e-5, 1 + 5e-5)))
    assert "✓" in lines_with(edge, "softmax row sums")[0]


def test_output_diff_and_mapping():
    text = render(wrong_output())
    assert lines_with(text, "Mismatched elements: 812 / 1792 (45.3%)")
    assert lines_with(text, "Greatest absolute difference: 0.41 at index (0, 3, 17)")
    assert lines_with(text, "q_proj ← your wq")
    assert not lines_with(text, "k_proj ←")  # mapped by name: not listed
    assert "took layer 'wq' for q_proj (by shape)" in text


def test_mapping_by_name_is_not_shown():
    result = Result("mha", "mha.py", Verdict.WRONG_OUTPUT, mapping={"q_proj": "q_proj", "o_proj": "o_proj"})
    assert "weight mapping" not in render(result)


def test_error_report_shows_message_and_the_users_traceback():
    text = render(error())
    assert lines_with(text, "error ─")
    assert "your code raised an exception: RuntimeError" in flat(text)
    assert lines_with(text, 'File "/home/u/prep/mha.py", line 41, in forward')
    assert lines_with(text, "scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)")
    assert "[red]x[/red]" in flat(text)  # user text is never parsed as markup
    assert "attnprep hint mha" in text and "attnprep solution mha" in text
    assert "NOT judged" not in text


def test_timeout_report():
    text = render(timeout())
    assert text.startswith("✗ mha.py  timeout")
    assert "time limit exceeded: no result after 10.0 s" in text
    assert "10.0 s" in text.splitlines()[1]
    assert "attnprep hint mha" in text


def test_internal_error_says_the_attempt_was_not_judged():
    text = render(internal())
    assert text.startswith("! mha.py  not judged")
    body = flat(text)
    assert "attnprep itself failed: your attempt was NOT judged" in body
    assert "KeyError: 'q_proj'" in body
    assert "attnprep hint" not in text and "attnprep solution" not in text
    assert "ATTNPREP_DEBUG=1" in text


def test_contract_report():
    text = render(contract())
    assert text.startswith("✗ mha.py  contract — class MultiHeadAttention not found")
    assert lines_with(text, "contract", "✗", "class MultiHeadAttention not found")
    assert "attnprep hint mha" in text


@pytest.mark.parametrize("name", sorted(ALL))
def test_pointers_only_when_failing(name):
    result = ALL[name]()
    text = render(result)
    has_pointers = "attnprep hint mha" in text or "attnprep hint gqa" in text
    assert has_pointers == (not result.passed and not result.internal)


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("full", [True, False])
def test_every_line_fits_80_columns(name, full):
    text = render(ALL[name](), full=full)
    widths = [cell_len(line) for line in text.splitlines()]
    assert widths and max(widths) <= 80, max(widths)


def test_long_lines_are_wrapped_not_overflowing():
    long = "x" * 200
    result = Result(
        "mha",
        "/a/very/long/path/" + "deep/" * 20 + "mha.py",
        Verdict.ERROR,
        checks=(Check("output_" + "y" * 30, False, long),),
        diagnoses=(Diagnosis("d", "title " + long, long, long, long),),
        error=ErrorInfo("exception", long, "Traceback (most recent call last):\n  " + long),
        output_diff=long,
        mapping={"q_proj": "w" * 90},
        mapping_notes=(long,),
    )
    text = render(result)
    assert max(cell_len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize("name", sorted(ALL))
def test_no_ansi_codes_without_a_colour_system(name):
    assert not ANSI.search(raw(ALL[name](), color=None))


def test_colours_are_emitted_when_the_console_has_them():
    # guards the test above: the same report does carry escape codes on a colour terminal
    assert ANSI.search(raw(wrong_output(), color="truecolor"))


def test_no_color_env_removes_colours(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out = raw(wrong_output(), color="truecolor")
    codes = set(re.findall(r"\x1b\[([0-9;]*)m", out))
    colour = {c for c in codes if re.search(r"(^|;)(3[0-8]|4[0-8]|9[0-7])(;|$)", c)}
    assert not colour, colour


def test_compact_report_keeps_what_to_fix_and_drops_the_detail():
    text = render(wrong_output(), full=False)
    assert GQA_TITLE in flat(text) and f"fix {GQA_FIX}" in flat(text)
    assert lines_with(text, "output", "✗")
    assert not lines_with(text, "padding", "✓")  # only failed checks
    for detail in ("shapes", "attention:", "softmax row sums", "output vs reference", "weight mapping"):
        assert detail not in text
    assert "attnprep hint gqa" in text


# --- summary ------------------------------------------------------------------------------------------


def test_summary_one_line_per_file_and_a_total():
    console = Console(record=True, width=80, color_system=None, file=io.StringIO())
    render_summary([wrong_output(), passed(), internal()], console)
    text = console.export_text()
    assert lines_with(text, "✗", "wrong output", "gqa", "gqa.py", "0.34 s")
    assert lines_with(text, "✓", "passed", "mha", "mha.py", "0.21 s")
    assert lines_with(text, "!", "not judged", "mha.py")
    assert text.rstrip().splitlines()[-1] == "3 files: 1 passed, 1 failed, 1 not judged (attnprep error) in 0.55 s"
    assert max(cell_len(line) for line in text.splitlines()) <= 80


def test_summary_counts_without_internal_errors():
    console = Console(record=True, width=80, color_system=None, file=io.StringIO())
    render_summary([passed()], console)
    assert console.export_text().rstrip().splitlines()[-1] == "1 file: 1 passed, 0 failed in 0.21 s"


# --- no torch ---------------------------------------------------------------------------------------


def test_report_does_not_import_torch():
    code = "import sys, attnprep.report; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0

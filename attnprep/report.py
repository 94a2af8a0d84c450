"""The Rich report of `attnprep check`: it only reads :class:`~attnprep.grader.result.Result` values.

Public API::

    render_result(result, console, full=True)   # the report of one attempt
    render_summary(results, console)            # one line per file and a total
    verdict_line(result) -> rich.text.Text      # one line, also used by the drill's live display

The report reads top-down in the order people read a failure (like ``torch.testing.assert_close``):
the verdict, what broke (error, named mistakes), then the detail (checks, shapes, the attention
heat-map, softmax row sums, the output difference, the weight mapping) and where to go next.
Each part is printed only when the result has data for it.

Everything that comes from the attempt or the grader (messages, tracebacks, details) is built as
:class:`rich.text.Text`, never parsed as console markup, so ``[`` in a message stays literal, and
every text the attempt could have put words into (its file name, exception, traceback, printed
output, layer names, quoted lines) goes through :func:`attnprep.safe_text.visible` first, so that a
control character in it is shown (``\x1b``), never sent to the terminal.
No torch here: this module renders plain data. Colours come from the console (Rich honours
``NO_COLOR`` and non-terminals); nothing is forced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from attnprep import texts, wording
from attnprep.grader.result import ROW_SUM_TOL, Check, Diagnosis, ErrorInfo, Heatmap, Result, ShapeRow
from attnprep.safe_text import visible
from attnprep.prose import Prose  # text that wraps the way Chinese is set (shared with the CLI)

LEAK_THRESHOLD = 0.01  # probability mass on a masked cell that counts as "leaked"
HEATMAP_MAX = 12  # queries / keys shown per grid; bigger maps are truncated with a note
SHADES = " ░▒▓█"  # level 0 (negligible) … 4 (the largest probability shown)

OK, FAIL, NA = "✓", "✗", "–"


# --- small helpers -----------------------------------------------------------------------------


def _seconds(duration_s: float) -> str:
    return f"{duration_s:.2f} s" if duration_s < 10 else f"{duration_s:.1f} s"


def _file_name(result: Result) -> str:
    return visible(Path(result.file).name, one_line=True) if result.file else "(no file)"


def _exercise_title(exercise_id: str, exercise=None) -> str | None:
    """The title of the exercise (the resolved one when given), or None (unknown id)."""
    if exercise is not None:
        return exercise.title
    if not exercise_id:
        return None
    try:
        from attnprep import exercises

        return exercises.get(exercise_id).title
    except Exception:  # the report must render whatever the registry says
        return None


def _mark(passed: bool | None) -> Text:
    if passed is None:
        return Text(NA, style="dim")
    return Text(OK, style="bold green") if passed else Text(FAIL, style="bold red")


def _symbol(result: Result) -> Text:
    if result.internal:
        return Text("!", style="bold yellow")
    if result.blank:  # not started, not a failure
        return Text("·", style="bold yellow")
    return _mark(result.passed)


def _verdict_style(result: Result) -> str:
    if result.internal or result.blank:
        return "bold yellow"
    return "bold green" if result.passed else "bold red"


def _reason(result: Result) -> str:
    """What broke first, in a few words: the named mistake, the error, or the first failed check;
    one line whatever the attempt's text held (the lines of a message joined by spaces: the
    error panel shows them as they are)."""
    return visible(_first_break(result).replace("\n", " "), one_line=True)


def _first_break(result: Result) -> str:
    if result.internal:
        message = wording.error_line(result.error) if result.error else ""
        return texts.t("report.internal_reason", message=message) if message else texts.t("error_kind.internal")
    if result.diagnoses:
        more = len(result.diagnoses) - 1
        title = wording.mistake(result.exercise, result.diagnoses[0]).title
        return texts.t("report.reason_more", title=title, more=more) if more else title
    if result.error is not None:
        return wording.error_line(result.error)
    for check in result.checks:
        if check.passed is False:
            detail = wording.check_detail(check)
            if not detail:
                return texts.t("report.check_failed", name=wording.check_name(check))
            return detail if check.id in ("runs", "contract", "syntax") else texts.t("report.check_reason", name=wording.check_name(check), detail=detail)
    return ""


# --- 1. verdict ----------------------------------------------------------------------------------


def verdict_line(result: Result) -> Text:
    """One line: ``✗ gqa.py  wrong output — GQA heads tiled …`` or ``✓ mha.py  passed in 0.21 s``.

    The Text is marked ``no_wrap`` with an ellipsis, which applies inside a Group, Table or Live.
    ``console.print`` joins the Texts it is given into a new one and drops that, so print it alone
    with ``console.print(line, no_wrap=True, overflow="ellipsis")`` to keep it on one line."""
    line = Prose(no_wrap=True, overflow="ellipsis")
    line.append_text(_symbol(result))
    line.append(" ")
    line.append(_file_name(result), style="bold")
    line.append("  ")
    if result.passed:
        line.append(texts.t("report.passed_in", seconds=_seconds(result.duration_s)), style="bold green")
        return line
    line.append(wording.verdict_label(result), style=_verdict_style(result))
    reason = _reason(result)
    if reason:
        line.append(" — ")
        line.append(reason)
    return line


def _header(result: Result, exercise=None) -> Group:
    details = Prose(style="dim", overflow="fold")
    title = _exercise_title(result.exercise, exercise)
    details.append("  " + texts.t("report.exercise") + " ")
    details.append(visible(result.exercise or "?", one_line=True))
    if title:
        details.append(texts.t("report.exercise_title", title=title))
    details.append(" · " + texts.t("report.file") + " ")
    details.append(visible(result.file or "?", one_line=True))
    details.append(f" · {_seconds(result.duration_s)}")
    headline = verdict_line(result)
    headline.no_wrap, headline.overflow = False, "fold"  # the full report shows the whole reason
    parts: list[RenderableType] = [headline, details]
    for note in result.notes:
        parts.append(Prose("  " + visible(texts.render(note), one_line=True), style="yellow", overflow="fold"))
    return Group(*parts)


# --- 2. error ------------------------------------------------------------------------------------


def _error_panel(result: Result, error: ErrorInfo) -> Panel:
    parts: list[RenderableType] = []
    if result.internal or error.kind == "internal":
        parts.append(Prose(texts.t("report.internal_banner"), style="bold yellow"))
    message = Prose(overflow="fold")
    message.append(wording.error_kind(error), style="bold")
    line = visible(wording.error_line(error))
    if line:
        message.append(texts.t("report.error_colon"))
        message.append(line)
    parts.append(message)
    if error.kind == "timeout":
        parts.append(Prose(texts.t("report.timeout_hint"), style="dim"))
    if error.traceback.strip():
        parts.append(Text(""))
        parts.append(
            Syntax(
                visible(error.traceback.rstrip("\n")),
                "pytb",
                theme="ansi_dark",
                background_color="default",
                word_wrap=True,
            )
        )
    internal = result.internal or error.kind == "internal"
    return Panel(
        Group(*parts),
        title=texts.t("report.attnprep_error") if internal else texts.t("report.error"),
        title_align="left",
        border_style="yellow" if internal else "red",
        box=box.ROUNDED,
    )


# --- 3. diagnoses --------------------------------------------------------------------------------


def _diagnosis_panel(exercise_id: str, diagnosis: Diagnosis, index: int, count: int) -> Panel:
    words = wording.mistake(exercise_id, diagnosis)
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold", no_wrap=True)
    body.add_column(overflow="fold")
    body.add_row(Text(texts.t("report.why")), Prose(words.why))
    body.add_row(Text(texts.t("report.fix")), Prose(words.fix, style="bold green"))
    parts: list[RenderableType] = [Prose(words.title, style="bold"), body]
    if words.evidence:
        parts.append(Prose(texts.t("report.evidence", text=visible(words.evidence)), style="dim", overflow="fold"))
    label = texts.t("report.mistake") if count == 1 else texts.t("report.mistake_n", index=index, count=count)
    return Panel(Group(*parts), title=label, title_align="left", border_style="magenta", box=box.ROUNDED)


# --- 4. checks -----------------------------------------------------------------------------------


def _checks_panel(checks: Sequence[Check], *, failed_only: bool = False) -> Panel:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    table.add_column(texts.t("report.check"), no_wrap=True)
    table.add_column("", no_wrap=True, justify="center")
    table.add_column(texts.t("report.detail"), overflow="fold")
    for check in checks:
        if failed_only and check.passed is not False:
            continue
        style = "red" if check.passed is False else ("dim" if check.passed is None else "")
        table.add_row(Text(wording.check_name(check)), _mark(check.passed), Prose(visible(wording.check_detail(check))), style=style)
    failed = sum(c.passed is False for c in checks)
    title = texts.t("report.checks_failed", failed=failed) if failed else texts.t("report.checks")
    return Panel(table, title=title, title_align="left", border_style="red" if failed else "dim", box=box.ROUNDED)


# --- 5. shapes -----------------------------------------------------------------------------------


def _shapes_panel(shapes: Sequence[ShapeRow]) -> Panel:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    table.add_column(texts.t("report.stage"), no_wrap=True)
    table.add_column(texts.t("report.expected"), overflow="fold")
    table.add_column(texts.t("report.got"), overflow="fold")
    table.add_column("", no_wrap=True)
    for row in shapes:
        got = Text(str(row.got)) if row.got is not None else Text(texts.t("report.not_observed"), style="dim")
        mark = _mark(row.ok) if row.got is not None else Text(NA, style="dim")
        table.add_row(Text(texts.say(row.stage)), Text(str(row.expected)), got, mark, style="" if row.ok else "bold red")
    mismatches = sum(not r.ok for r in shapes)
    title = texts.t("report.shapes_mismatch", count=mismatches) if mismatches else texts.t("report.shapes")
    return Panel(table, title=title, title_align="left", border_style="red" if mismatches else "dim", box=box.ROUNDED)


# --- 6. attention heat-map -----------------------------------------------------------------------


def _finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _allowed(heatmap: Heatmap, i: int, j: int) -> bool:
    rows = heatmap.allowed
    return not (i < len(rows) and j < len(rows[i])) or bool(rows[i][j])


def _graded(heatmap: Heatmap, i: int) -> bool:
    """Whether query row ``i`` is graded (not a padded query)."""
    rows = heatmap.graded
    return rows is None or i >= len(rows) or bool(rows[i])


def leaks(heatmap: Heatmap) -> list[tuple[int, int, float]]:
    """``(query, key, mass)`` of every masked cell of a graded query row where the attempt puts
    more than :data:`LEAK_THRESHOLD` probability, largest first."""
    if heatmap.got is None:
        return []
    found = [
        (i, j, p)
        for i, row in enumerate(heatmap.got)
        if _graded(heatmap, i)
        for j, p in enumerate(row)
        if not _allowed(heatmap, i, j) and (not _finite(p) or p > LEAK_THRESHOLD)
    ]
    return sorted(found, key=lambda c: -c[2] if _finite(c[2]) else -math.inf)


def _grid(values: list[list[float]], heatmap: Heatmap, n: int, vmax: float, *, is_got: bool) -> Text:
    """One grid, 2 columns per cell: a column header of key indices (mod 10), then one row per query."""
    cols = min(n, max((len(r) for r in values), default=0))
    text = Text(no_wrap=True)
    text.append("   " + "".join(f"{j % 10:>2}" for j in range(cols)), style="dim")
    for i, row in enumerate(values[:n]):
        text.append("\n")
        text.append(f"{i:>2} ", style="dim")
        if not _graded(heatmap, i):  # a padded query: its output is not graded, whatever it holds
            text.append(" -" * len(row[:cols]), style="dim")
            continue
        for j, p in enumerate(row[:cols]):
            masked = not _allowed(heatmap, i, j)
            if not _finite(p):
                if masked and not is_got:
                    text.append(" ·", style="dim")
                else:
                    text.append("??", style="bold yellow")
            elif masked:
                if is_got and p > LEAK_THRESHOLD:
                    text.append("××", style="bold white on red")
                else:
                    text.append(" ·", style="dim")
            else:
                level = 0 if p <= 1e-3 else max(1, min(4, math.ceil(4 * p / vmax)))
                text.append(SHADES[level] * 2, style="cyan")
    return text


def _heatmap_panel(heatmap: Heatmap, width: int) -> Panel:
    # panel border + padding 4, row labels 3 per grid, gap 4: each cell is 2 columns per grid
    n = max(2, min(HEATMAP_MAX, (width - 4 - 6 - 4) // 4))
    grids = [heatmap.expected] + ([heatmap.got] if heatmap.got is not None else [])
    shown = [p for g in grids for i, row in enumerate(g[:n]) if _graded(heatmap, i) for p in row[:n]]
    vmax = max((p for p in shown if _finite(p)), default=1.0) or 1.0
    nan_seen = not all(_finite(p) for p in shown)
    ungraded = any(not _graded(heatmap, i) for i in range(min(n, len(heatmap.expected))))
    size = max((len(heatmap.expected), *(len(r) for r in heatmap.expected)), default=0)
    if heatmap.got is not None:
        size = max(size, len(heatmap.got), *(len(r) for r in heatmap.got))

    side = Table.grid(padding=(0, 4))
    side.add_column(no_wrap=True)
    side.add_column(no_wrap=True)
    expected = Group(Text(texts.t("report.expected"), style="bold"), _grid(heatmap.expected, heatmap, n, vmax, is_got=False))
    if heatmap.got is None:
        got: RenderableType = Group(Text(texts.t("report.your_attempt"), style="bold"), Prose(texts.t("report.not_observed"), style="dim"))
    else:
        got = Group(Text(texts.t("report.your_attempt"), style="bold"), _grid(heatmap.got, heatmap, n, vmax, is_got=True))
    side.add_row(expected, got)

    legend = Prose(style="dim", overflow="fold")
    legend.append(texts.t("report.legend", vmax=vmax))
    found = leaks(heatmap)
    if found:
        legend.append(" · ")
        legend.append("××", style="bold white on red")
        legend.append(texts.t("report.legend_leak", threshold=LEAK_THRESHOLD))
    if nan_seen:
        legend.append(texts.t("report.legend_nan"))
    if ungraded:
        legend.append(texts.t("report.legend_ungraded"))
    parts: list[RenderableType] = [side, legend]
    if size > n:
        parts.append(Prose(texts.t("report.showing", last=n - 1, size=size), style="dim"))
    if found:
        cells = ", ".join(f"q{i}→k{j} {p:.2f}" if _finite(p) else f"q{i}→k{j} {texts.t('report.not_finite')}" for i, j, p in found[:3])
        key = "report.leaked_many" if len(found) > 1 else "report.leaked_one"
        parts.append(Prose(texts.t(key, count=len(found), threshold=LEAK_THRESHOLD, cells=cells), style="bold red"))
    title: str | None = texts.t("report.attention_title", sample=heatmap.sample, head=heatmap.head, case=texts.say(heatmap.case))
    if cell_len(title) + 6 > width:  # Rich would cut a long panel title silently: it opens the body instead
        parts.insert(0, Prose(title, style="bold", overflow="fold"))
        title = None
    return Panel(Group(*parts), title=title, title_align="left", border_style="red" if found else "dim", box=box.ROUNDED)


# --- 7. softmax row sums -------------------------------------------------------------------------


def _row_sums_line(row_sums: tuple[float, float]) -> Text:
    low, high = row_sums
    ok = all(_finite(v) and abs(v - 1.0) <= ROW_SUM_TOL for v in (low, high))
    line = Prose(no_wrap=False, overflow="fold")
    line.append(texts.t("report.row_sums") + "  ", style="bold")
    line.append(texts.t("report.row_sums_values", low=low, high=high) + "  ")
    line.append_text(_mark(ok))
    if not ok:
        line.append("  " + texts.t("report.row_sums_bad"), style="red")
    return line


# --- 9. weight mapping ---------------------------------------------------------------------------


def _mapping_panel(result: Result) -> Panel | None:
    """Only when the grader did not map by name. ``mapping`` is contract role → the user's layer."""
    renamed = [(role, name) for role, name in result.mapping.items() if role != name]
    notes = [n for n in result.mapping_notes if n.kind != "by_shape"]  # the table already says those
    if not renamed and not notes:
        return None
    parts: list[RenderableType] = []
    if renamed:
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True, style="dim")
        table.add_column(overflow="fold")
        for role, name in renamed:
            table.add_row(Text(role, style="bold"), Text("←"), Prose(texts.t("report.your_layer", name=visible(name, one_line=True))))
        parts.append(table)
    for note in notes:
        parts.append(Prose("- " + visible(wording.mapping_note(note)), style="dim", overflow="fold"))
    title = texts.t("report.mapping_title") if renamed else texts.t("report.mapping_notes_title")
    return Panel(Group(*parts), title=title, title_align="left", border_style="dim", box=box.ROUNDED)


# --- 10. footer ----------------------------------------------------------------------------------


def _footer(result: Result) -> Text | None:
    if result.passed:
        return None
    if result.internal:
        return Prose(texts.t("report.internal_footer"), style="dim")
    if not result.exercise:
        return None
    footer = Prose(overflow="fold")
    footer.append(texts.t("report.stuck") + " ", style="dim")
    footer.append(f"attnprep hint {result.exercise}", style="bold")
    footer.append(" · ", style="dim")
    footer.append(f"attnprep solution {result.exercise}", style="bold")
    return footer


# --- the report ----------------------------------------------------------------------------------


def _divergence_panel(result: Result) -> Panel:
    d = result.divergence
    parts: list[RenderableType] = [Prose(visible(wording.divergence_text(d)), overflow="fold")]
    if d.code:
        parts.append(Syntax(visible(d.code), "python", line_numbers=True, start_line=d.line, theme="ansi_dark",
                            background_color="default", word_wrap=True))
    return Panel(Group(*parts), title=texts.t("divergence.title"), title_align="left", border_style="yellow", box=box.ROUNDED)


def _stdout_panel(stdout: str) -> Panel:
    return Panel(Text(visible(stdout.rstrip("\n")), overflow="fold"), title=texts.t("report.stdout_title"), title_align="left",
                 border_style="dim", box=box.ROUNDED)


def _passed_checks(checks: Sequence[Check]) -> RenderableType:
    """A pass in a few lines: what the output row says and the names of the other checks that
    passed (the rows, shapes and heat-map of a pass repeat the reference); a check not judged
    keeps its row, with its reason."""
    output = next((c for c in checks if c.id == "output" and c.passed), None)
    others = [wording.check_name(c) for c in checks if c.passed and c is not output]
    line = Prose(overflow="fold")
    line.append("✓ ", style="green")
    if output is not None:
        line.append(wording.check_detail(output))
        if others:
            line.append(texts.t("report.passed_also", names=texts.t("report.list_sep").join(others)), style="dim")
    else:
        line.append(texts.t("report.passed_checks", names=texts.t("report.list_sep").join(others)))
    unjudged = [c for c in checks if c.passed is None]
    return Group(line, _checks_panel(unjudged)) if unjudged else line


def render_result(result: Result, console: Console, *, full: bool = True, exercise=None, headline: bool = True) -> None:
    """Print the report of one attempt.

    ``full=False`` is the compact form (the drill re-checks on every save): verdict, error,
    named mistakes, failed checks and the footer; shapes, heat-map, row sums, output diff and
    mapping are left out. A pass is always compact: the headline, its checks in a line or two and
    the mapping (so that a drill's log stays on a 24-row screen). ``headline=False`` leaves out the
    verdict and file lines (a drill's log has just said them)."""
    if headline:
        console.print(_header(result, exercise))
    if result.passed:
        if result.stdout.strip():
            console.print(_stdout_panel(result.stdout))
        console.print(_passed_checks(result.checks))
        mapping = _mapping_panel(result)
        if mapping is not None:
            console.print(mapping)
        return
    if result.error is not None and not result.blank:  # a blank stub: the headline says it all
        console.print(_error_panel(result, result.error))
    if result.stdout.strip():
        console.print(_stdout_panel(result.stdout))
    for index, diagnosis in enumerate(result.diagnoses, 1):
        console.print(_diagnosis_panel(result.exercise, diagnosis, index, len(result.diagnoses)))
    if result.divergence is not None:
        console.print(_divergence_panel(result))
    # a check that only repeats the error panel's message is left out
    checks = [c for c in result.checks if not (result.error is not None and c.id in ("runs", "syntax"))]
    if checks and (full or any(c.passed is False for c in checks)):
        console.print(_checks_panel(checks, failed_only=not full))
    if full:
        if result.shapes:
            console.print(_shapes_panel(result.shapes))
        if result.heatmap is not None:
            console.print(_heatmap_panel(result.heatmap, console.width))
        if result.row_sums is not None:
            console.print(_row_sums_line(result.row_sums))
        if result.output_diff is not None:
            diff = Prose(wording.diff_text(result.output_diff), overflow="fold")
            console.print(Panel(diff, title=texts.t("report.diff_title"), title_align="left", border_style="red", box=box.ROUNDED))
        mapping = _mapping_panel(result)
        if mapping is not None:
            console.print(mapping)
    footer = _footer(result)
    if footer is not None:
        console.print(footer)


def render_summary(results: list[Result], console: Console) -> None:
    """One line per checked file (verdict, exercise, file, duration) and a total line."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    table.add_column("", no_wrap=True)
    table.add_column(texts.t("report.verdict"), no_wrap=True)
    table.add_column(texts.t("report.exercise"), no_wrap=True)
    table.add_column(texts.t("report.file"), overflow="fold")
    table.add_column(texts.t("report.time"), justify="right", no_wrap=True)
    for r in results:
        verdict = Text(wording.verdict_label(r), style=_verdict_style(r))
        table.add_row(_symbol(r), verdict, Text(visible(r.exercise or "?", one_line=True)), Text(visible(r.file or "?", one_line=True)),
                      Text(_seconds(r.duration_s)))
    console.print(table)

    passed = sum(r.passed for r in results)
    internal = sum(r.internal for r in results)
    failed = len(results) - passed - internal
    total = Prose()
    total.append(texts.t("report.total_files", count=len(results)) + " ", style="bold")
    total.append(texts.t("report.total_passed", count=passed), style="bold green" if passed else "dim")
    total.append(", ")
    total.append(texts.t("report.total_failed", count=failed), style="bold red" if failed else "dim")
    if internal:
        total.append(", ")
        total.append(texts.t("report.total_internal", count=internal), style="bold yellow")
    total.append(" " + texts.t("report.total_time", seconds=_seconds(sum(r.duration_s for r in results))), style="dim")
    console.print(total)


__all__ = ["render_result", "render_summary", "verdict_line", "leaks"]

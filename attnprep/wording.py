"""Results in words: the one place a :class:`~attnprep.grader.result.Result`'s ids and numbers
become text, in the current language. The Rich report and ``check --json`` both read from here.
Torch-free.
"""

from __future__ import annotations

from typing import NamedTuple

from attnprep import texts
from attnprep.grader.result import Check, Diagnosis, ErrorInfo, MappingNote, OutputDiff, Result


class Mistake(NamedTuple):
    title: str
    why: str
    fix: str
    evidence: str


def verdict_label(result: Result) -> str:
    if result.internal:
        return texts.t("verdict.not_judged")
    if result.blank:  # the untouched stub: not a failed run (its token stays `error`)
        return texts.t("verdict.not_started")
    return texts.t(f"verdict.{result.verdict.value}")


def check_name(check: Check) -> str:
    key = f"check_name.{check.id}"
    return texts.t(key) if texts.has(key) else check.id


def check_detail(check: Check) -> str:
    return texts.render(check.message)


def error_kind(error: ErrorInfo) -> str:
    key = f"error_kind.{error.kind}"
    return texts.t(key) if texts.has(key) else error.kind


def error_line(error: ErrorInfo) -> str:
    return texts.render(error.message)


def evidence(diagnosis: Diagnosis) -> str:
    parts = [texts.render(m) for m in diagnosis.evidence]
    out = ""
    for part in parts:  # a parenthesis joins the sentence before it; the rest are "; " separated
        if not out:
            out = part
        elif part.startswith("("):
            out += " " + part
        elif part.startswith("（"):
            out += part
        else:
            out += texts.t("shell.semicolon") + part
    return out


def mistake(exercise_id: str, diagnosis: Diagnosis) -> Mistake:
    """Title, why, fix of a named mistake (from the exercise's catalogue) and the evidence."""
    title = why = fix = ""
    try:
        from attnprep import exercises

        m = exercises.get(exercise_id).mistake(diagnosis.id) if exercise_id else exercises.mistake_catalogue()[diagnosis.id]
        title, why, fix = m.title, m.why, m.fix
    except Exception:  # an id the registry does not know: show the id
        title = diagnosis.id
    return Mistake(title, why, fix, evidence(diagnosis))


def mapping_note(note: MappingNote) -> str:
    return texts.t(f"mapping.{note.kind}", role=note.role, layer=note.layer)


def _config(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def diff_text(diff: OutputDiff) -> str:
    """``torch.testing.assert_close``'s summary, in the reading order people expect."""
    lines = [texts.t("diff.header", case=texts.say(diff.case), output=texts.say(diff.output), config=_config(diff.config))]
    percent = 100 * diff.mismatched / max(diff.total, 1)
    lines.append(texts.t("diff.mismatched", bad=diff.mismatched, total=diff.total, percent=percent))
    if diff.nonfinite is not None:
        lines.append(texts.t("diff.nonfinite", value=diff.nonfinite, index=diff.nonfinite_at))
    if diff.max_abs is not None:
        lines.append(texts.t("diff.max_abs", value=diff.max_abs, index=diff.max_abs_at, allowed=diff.atol))
        lines.append(texts.t("diff.max_rel", value=diff.max_rel, index=diff.max_rel_at, allowed=diff.rtol))
    return "\n".join(lines)


def divergence_text(d) -> str:
    """One line: where the attempt first goes wrong and what the reference has there."""
    reason = "reordered" if d.reason == "layout" and d.named == d.ref_named else d.reason
    text = texts.t(f"divergence.{reason}", line=d.line, name=d.name or texts.t("divergence.unnamed"),
                   shape=d.shape, named=d.named, ref_name=texts.say(d.ref_name), ref_named=d.ref_named, ref_code=d.ref_code)
    if reason in ("scaled", "scalar", "scaled_defined") and getattr(d, "case", ""):  # a factor holds for the sizes it was seen at
        text = texts.t("divergence.on_case", text=text, case=texts.say(d.case), config=d.config)
    part = getattr(d, "part", "")
    return texts.t("divergence.part", part=texts.say(part), text=text) if part else text


def result_json(result: Result) -> dict:
    """One result of ``check --json`` (version 2): ids and keys stay English, the words follow
    the language."""
    data = {
        "exercise": result.exercise,
        "file": result.file,
        "passed": result.passed,
        "verdict": result.verdict.value,
        "label": verdict_label(result),
        "checks": [{"id": c.id, "passed": c.passed, "detail": check_detail(c)} for c in result.checks],
        "diagnoses": [
            {"id": d.id, **mistake(result.exercise, d)._asdict()} for d in result.diagnoses
        ],
        "divergence": None if result.divergence is None else {
            "line": result.divergence.line, "code": result.divergence.code, "detail": divergence_text(result.divergence),
            "part": result.divergence.part},
        "stdout": result.stdout,
        "mapping": dict(result.mapping),
        "notes": [texts.render(n) for n in result.notes],
        "duration_s": round(result.duration_s, 3),
    }
    if result.error is not None:
        data["error"] = {"kind": result.error.kind, "message": error_line(result.error), "traceback": result.error.traceback}
    if result.internal:
        data["internal"] = True
    return data


def results_json(results: list[Result]) -> dict:
    from attnprep.grader.result import JSON_VERSION

    return {"version": JSON_VERSION, "results": [result_json(r) for r in results]}


# --- the reference solutions in the language ------------------------------------------------------

_PROSE = r"[A-Za-z]{2,}[,;:]?\s+[A-Za-z]{2,}"
_MARKER = r"(?:end)?region \S+"  # `# region rope-helpers`: read by the stub templates, not prose


def needs_words(comment: str) -> bool:
    """Whether a comment (its text after "#") says something in English: not only shapes, code or
    a region marker. ``(B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)`` needs no translation."""
    import re

    text = comment.strip()
    if re.fullmatch(_MARKER, text):
        return False
    return bool(re.search(_PROSE, re.sub(r"\([^()]*\)", " ", text)))


def solution_words(exercise_id: str, lang: str) -> dict[str, dict[str, str]]:
    """{"comments": {English: said}, "docstrings": {name: said}} for the reference solution of an
    exercise: ``exercises/<id>/solution.<lang>.toml`` over the shared ``exercises/solution.<lang>.toml``."""
    import tomllib

    from attnprep import exercises

    words: dict[str, dict[str, str]] = {"comments": {}, "docstrings": {}}
    for path in (exercises.HERE / f"solution.{lang}.toml", exercises.HERE / exercise_id / f"solution.{lang}.toml"):
        if path.is_file():
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            for table in words:
                words[table].update(data.get(table, {}))
    return words


def _docstrings(source: str):
    """(name, string node) of every docstring: "module" for the file's own, else the name of the
    function or class it documents."""
    import ast

    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                yield getattr(node, "name", "module"), first.value


def _comments(source: str):
    """Every comment token of ``source``."""
    import io
    import tokenize

    return (t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT)


def missing_words(exercise_id: str, source: str, lang: str) -> tuple[list[str], list[str]]:
    """What :func:`solution_source` leaves in English: the comments of ``source`` that say something
    and the names of its docstrings ("module" for the file's) without their words in ``lang``."""
    words = solution_words(exercise_id, lang)
    comments = [t.string[1:].strip() for t in _comments(source)]
    return ([c for c in comments if needs_words(c) and c not in words["comments"]],
            [name for name, _ in _docstrings(source) if name not in words["docstrings"]])


def solution_source(exercise_id: str, source: str, lang: str | None = None) -> str:
    """The source of a reference solution with its comments and docstrings in ``lang`` (default:
    the current language), from :func:`solution_words`; the code itself is untouched, and a comment
    or docstring without its translation stays as written. English: the file as it is."""
    lang = lang or texts.language()
    if lang == "en":
        return source
    words = solution_words(exercise_id, lang)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []  # (row, col, end row, end col, text), rows from 1
    for token in _comments(source):
        said = words["comments"].get(token.string[1:].strip())
        if said is not None:
            edits.append((*token.start, *token.end, "# " + said))
    for name, node in _docstrings(source):
        said = words["docstrings"].get(name)
        if said is None:
            continue
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        col = len(first.encode("utf-8")[: node.col_offset].decode("utf-8"))
        end_col = len(last.encode("utf-8")[: node.end_col_offset].decode("utf-8"))
        indent = " " * col if first[:col].strip() == "" else ""
        text = said.replace("\n", "\n" + indent).replace("\n" + indent + "\n", "\n\n")
        closing = "\n" + indent if node.lineno != node.end_lineno and not last[:end_col - 3].strip() else ""
        edits.append((node.lineno, col, node.end_lineno, end_col, f'"""{text}{closing}"""'))
    for row, col, end_row, end_col, text in sorted(edits, reverse=True):
        head, tail = lines[row - 1][:col], lines[end_row - 1][end_col:]
        lines[row - 1:end_row] = [head + text + tail]
    return "".join(lines)

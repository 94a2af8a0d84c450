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
    return texts.t("verdict.not_judged") if result.internal else texts.t(f"verdict.{result.verdict.value}")


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
        else:
            out += "; " + part
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
    lines = [texts.t("diff.header", case=diff.case, output=diff.output, config=_config(diff.config))]
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
                   shape=d.shape, named=d.named, ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
    part = getattr(d, "part", "")
    return texts.t("divergence.part", part=part, text=text) if part else text


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

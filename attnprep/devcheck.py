"""``attnprep dev check ID``: one exercise folder validated the way the tests validate the registry.

rustlings' ``dev check`` is the model: a contributor who adds ``exercises/<id>/`` and
``solutions/<id>.py`` asks the tool what is missing, in words, instead of reading the test suite.
:func:`findings` yields one :class:`Finding` per rule, in the order a contributor meets them (the
folder loads, its texts exist in every language, the stub, the reference, the corpus); the command
renders them. Each finding is a text key and its params: the words live in ``attnprep/texts``.

The corpus (``tests/corpus/<id>/``) is part of a checkout, not of an installed wheel: without it the
corpus rules say so and are skipped. Grading needs torch; the texts and folder rules do not.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Iterator, NamedTuple

from attnprep import exercises
from attnprep.attempts import header_id

CORPUS = exercises.HERE.parent / "tests" / "corpus"
MIN_HINTS = 3
MIN_CORRECT = 3
KEY_POINTS = (3, 6)  # [notes] key_points: at least, at most
MIN_QA = 5  # [[notes.qa]] entries, each question with a "?" and an answer of some words
MIN_ANSWER_WORDS = 8
LANGUAGES = ("en", "zh")


class Finding(NamedTuple):
    rule: str  # a stable id: folder, solution, hints, texts, mistakes, stub, reference, plants, corpus
    ok: bool
    key: str  # text key under devcheck.*
    params: dict


def _ok(rule: str, key: str, **params) -> Finding:
    return Finding(rule, True, key, params)


def _bad(rule: str, key: str, **params) -> Finding:
    return Finding(rule, False, key, params)


def corpus_header(path: Path) -> tuple[str | None, str | None]:
    """A corpus attempt's ``# expect: <verdict>`` and ``# diagnosis: <mistake id>`` (lines 1–3;
    two mistakes named together: ``<id> + <id>``)."""
    expect = diagnosis = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:3]:
        if line.startswith("# expect:"):
            expect = line.split(":", 1)[1].strip()
        elif line.startswith("# diagnosis:"):
            diagnosis = line.split(":", 1)[1].strip()
    return expect, diagnosis


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as f:
        return f.readline()


def _text_findings(exercise: exercises.Exercise) -> Iterator[Finding]:
    hints = exercise.hints
    if len(hints) < MIN_HINTS or len(set(hints)) < len(hints):
        yield _bad("hints", "devcheck.hints_few", count=len(set(hints)), least=MIN_HINTS)
    else:
        yield _ok("hints", "devcheck.hints_ok", count=len(hints))
    # what `attnprep solution` and the interview show (tests/test_registry.py test_metadata's rule)
    short = [qa.q for qa in exercise.qa if "?" not in qa.q or len(qa.a.split()) < MIN_ANSWER_WORDS]
    points = len(exercise.key_points)
    if not KEY_POINTS[0] <= points <= KEY_POINTS[1] or len(exercise.qa) < MIN_QA or short:
        yield _bad("notes", "devcheck.notes_few", points=points, low=KEY_POINTS[0], high=KEY_POINTS[1],
                   qa=len(exercise.qa), least=MIN_QA, words=MIN_ANSWER_WORDS, short=", ".join(short) or "-")
    else:
        yield _ok("notes", "devcheck.notes_ok", points=points, qa=len(exercise.qa))

    english = exercises._read_toml(exercise.folder / "exercise.toml")
    for lang in LANGUAGES[1:]:
        path = exercise.folder / f"{lang}.toml"
        if not path.is_file():
            yield _bad("texts", "devcheck.texts_file_missing", lang=lang, path=_shown(path))
            continue
        words = exercises._read_toml(path)
        missing = [key for key in ("title", "summary") if not words.get(key)]
        if len(words.get("hints", [])) != len(english.get("hints", [])):
            missing.append("hints")
        notes, their = english.get("notes", {}), words.get("notes", {})
        if len(their.get("key_points", [])) != len(notes.get("key_points", [])):
            missing.append("notes.key_points")
        if len(their.get("qa", [])) != len(notes.get("qa", [])):
            missing.append("notes.qa")
        if english.get("contract", {}).get("details") and not words.get("contract", {}).get("details"):
            missing.append("contract.details")
        missing += [f"fixes.{m}" for m in english.get("fixes", {}) if not words.get("fixes", {}).get(m)]
        if missing:
            yield _bad("texts", "devcheck.texts_missing", lang=lang, path=_shown(path), keys=", ".join(missing))
        else:
            yield _ok("texts", "devcheck.texts_ok", lang=lang)

        catalogue = exercises.mistake_catalogue("en")
        translated = exercises.mistake_catalogue(lang)
        # a fix may be pure code, the same in every language, but is written there; a title and a why are prose
        own = exercise.folder / f"mistakes.{lang}.toml"
        given = {m.get("id"): m for m in exercises._read_toml(own).get("mistake", [])} if own.is_file() else {}
        untranslated = [m.id for m in exercise.mistakes
                        if any(getattr(translated[m.id], k) == getattr(catalogue[m.id], k) for k in ("title", "why"))
                        or (m.id in given and "fix" not in given[m.id])]
        if untranslated:
            yield _bad("mistakes", "devcheck.mistakes_untranslated", lang=lang, ids=", ".join(untranslated))
        else:
            yield _ok("mistakes", "devcheck.mistakes_translated", lang=lang, count=len(exercise.mistakes))
        yield _solution_words_finding(exercise, lang)
        if lang == "zh":
            yield _zh_rules_finding(exercise, english)


def _zh_rules_finding(exercise: exercises.Exercise, english: dict) -> Finding:
    """The Chinese texts of the folder held to their English as tests/test_zh_texts.py,
    test_zh_solutions.py and test_zh.py hold them (attnprep/zhrules.py): Chinese, the English's
    shapes, identifiers, code spans and numbers kept, no English sentence left, Chinese
    punctuation; in zh.toml, the exercise's own mistakes.zh.toml and the reference's words."""
    from attnprep import wording, zhrules

    found: list[str] = []
    folder = exercise.folder
    zh_path = folder / "zh.toml"
    if zh_path.is_file():
        zh = exercises._read_toml(zh_path)
        en = dict(zhrules.flat(zhrules.english_texts(english)))
        said = dict(zhrules.flat(zh))
        found += [f"zh.toml {p}" for path in en if path in said for p in zhrules.problems(path, en[path], said[path])]
        found += [f"zh.toml: ASCII punctuation in {line!r}" for text in zhrules.zh_strings(zh)
                  for line in zhrules.ascii_punctuation_by_chinese(text)]
    own, own_zh = folder / "mistakes.toml", folder / "mistakes.zh.toml"
    if own.is_file() and own_zh.is_file():
        en_mistakes = {m.get("id"): m for m in exercises._read_toml(own).get("mistake", [])}
        for m in exercises._read_toml(own_zh).get("mistake", []):
            for key in ("title", "why", "fix"):
                if m.get("id") in en_mistakes and key in m and key in en_mistakes[m["id"]]:
                    found += [f"mistakes.zh.toml {p}" for p in
                              zhrules.problems(f"{m['id']}.{key}", en_mistakes[m["id"]][key], m[key])]
            found += [f"mistakes.zh.toml: ASCII punctuation in {line!r}" for text in zhrules.zh_strings(m)
                      for line in zhrules.ascii_punctuation_by_chinese(text)]
    try:
        source = exercise.solution_path.read_text(encoding="utf-8")
        words = wording.solution_words(exercise.id, "zh")
        comments = [t.string[1:].strip() for t in wording._comments(source)]
        found += [f"solution.zh.toml {p}" for c in comments if c in words["comments"]
                  for p in zhrules.problems(f"comment {c!r}", c, words["comments"][c])]
        for name, node in wording._docstrings(source):
            if name in words["docstrings"]:
                found += [f"solution.zh.toml {p}" for p in
                          zhrules.problems(f"docstring of {name}", _docstring_text(node) or node.value,
                                           words["docstrings"][name])]
    except (SyntaxError, tomllib.TOMLDecodeError):
        pass  # said by the solution rule
    if found:
        return _bad("texts", "devcheck.zh_rules", id=exercise.id, count=len(found), first="; ".join(found[:3]))
    return _ok("texts", "devcheck.zh_rules_ok")


def _solution_words_finding(exercise: exercises.Exercise, lang: str) -> Finding:
    """``attnprep solution`` in ``lang``: every comment that says something and every docstring of
    the reference has its words in ``exercises/<id>/solution.<lang>.toml`` (or the shared one)."""
    from attnprep import wording

    path = exercise.folder / f"solution.{lang}.toml"
    try:
        comments, docstrings = wording.missing_words(exercise.id, exercise.solution_path.read_text(encoding="utf-8"), lang)
    except (SyntaxError, tomllib.TOMLDecodeError) as exc:
        return _bad("solution", "devcheck.solution_words_unreadable", path=_shown(path), error=f"{type(exc).__name__}: {exc}")
    if comments or docstrings:  # said by the first: a comment, else a docstring's name
        key = "devcheck.solution_words_missing" if comments else "devcheck.solution_docstring_missing"
        return _bad("solution", key, lang=lang, path=_shown(path), count=len(comments) + len(docstrings),
                    first=comments[0] if comments else docstrings[0])
    source = exercise.solution_path.read_text(encoding="utf-8")
    own = exercises._read_toml(path) if path.is_file() else {}
    mine = {name: _docstring_text(node) for name, node in wording._docstrings(source)}
    # an entry of its own file that no comment or docstring of the reference has is never shown
    # (a docstring is keyed by its function's or class's name: "RMSNorm", not "RMSNorm.__doc__")
    stale = sorted(set(own.get("comments", {})) - {t.string[1:].strip() for t in wording._comments(source)})
    stale += sorted(set(own.get("docstrings", {})) - set(mine))
    if stale:
        return _bad("solution", "devcheck.solution_words_stale", path=_shown(path), keys=", ".join(stale),
                    names=", ".join(mine))
    # a docstring that takes the shared file's words, written for another reference's docstring of
    # that name whose English differs, would be shown in another solution's words
    shared = exercises._read_toml(exercises.HERE / f"solution.{lang}.toml").get("docstrings", {}) \
        if (exercises.HERE / f"solution.{lang}.toml").is_file() else {}
    borrowed = [n for n in mine if n in shared and n not in own.get("docstrings", {})]
    for other_id, other in exercises.registry().items():
        if other_id == exercise.id or not borrowed or not other.solution_path.is_file():
            continue
        other_own = other.folder / f"solution.{lang}.toml"
        overridden = exercises._read_toml(other_own).get("docstrings", {}) if other_own.is_file() else {}
        theirs = {name: _docstring_text(node) for name, node in wording._docstrings(other.solution_path.read_text(encoding="utf-8"))}
        for name in borrowed:
            if name in theirs and name not in overridden and theirs[name] != mine[name]:
                return _bad("solution", "devcheck.solution_words_borrowed", lang=lang, path=_shown(path), name=name,
                            other=other_id)
    return _ok("solution", "devcheck.solution_words_ok", lang=lang)


def _docstring_text(node) -> str:
    """A docstring's text as ``ast.get_docstring`` cleans it (its indentation removed)."""
    import inspect

    return inspect.cleandoc(node.value) if isinstance(node.value, str) else ""


def _said(message) -> str:
    """A check's message in the current language's words, for a finding's param."""
    from attnprep import texts

    try:
        return texts.render(message)
    except Exception:  # a detail the texts cannot render is left out, not guessed
        return ""


def _listing_finding(exercise: exercises.Exercise) -> Finding:
    """The shared mistakes the exercise's kind and contract call for are listed, and none that cannot
    happen in it (tests/test_registry.py's rule, from attnprep/exercises/applies.py): a copied
    ``mistakes`` list keeps the other exercise's kind's, and a new kind's traits add some."""
    from attnprep.exercises.applies import listing_problems

    missing, cannot = listing_problems(exercise)
    if missing or cannot:
        return _bad("mistakes", "devcheck.mistakes_listing", path=_shown(exercise.folder / "exercise.toml"),
                    missing=", ".join(missing) or "-", cannot=", ".join(cannot) or "-")
    return _ok("mistakes", "devcheck.mistakes_listing_ok", count=len(exercise.mistakes))


def _edits_finding(exercise: exercises.Exercise) -> Finding:
    """The mistakes as edits of the reference (``[grading] knobs`` and ``edits``): one edit list per
    knob and no other, each ``old`` in the reference exactly once (tests/test_edits.py's rule). A
    knob whose edit does not apply is a mistake the grader silently never names."""
    from attnprep.grader.edits import EditError, edited_source

    knobs, edits = list(exercise.grading.get("knobs", [])), dict(exercise.grading.get("edits", {}))
    path = _shown(exercise.folder / "exercise.toml")
    if not edits:
        return _ok("edits", "devcheck.edits_none")
    without = [k for k in knobs if k not in edits]
    if without:
        return _bad("edits", "devcheck.edits_knob_without_edit", path=path, knobs=", ".join(without))
    unused = [k for k in edits if k not in knobs]
    if unused:
        return _bad("edits", "devcheck.edits_edit_without_knob", path=path, knobs=", ".join(unused))
    source = exercise.solution_path.read_text(encoding="utf-8")
    for knob, changes in edits.items():
        for change in changes:
            try:
                edited_source(source, [change])
            except (EditError, KeyError, TypeError):
                old = change.get("old") if isinstance(change, dict) else change
                return _bad("edits", "devcheck.edits_not_once", path=path, knob=knob, old=old,
                            count=source.count(old) if isinstance(old, str) else 0,
                            solution=_shown(exercise.solution_path))
    return _ok("edits", "devcheck.edits_ok", count=len(edits))


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(exercises.HERE.parent))
    except ValueError:
        return str(path)


def _plants_finding(exercise: exercises.Exercise) -> Finding:
    """`attnprep debug`'s material: exercises/<id>/plants.toml, fitting the current reference."""
    from attnprep import debugging

    singles, pairs = debugging.load_plants(exercise)
    if not singles:
        return _bad("plants", "devcheck.plants_missing", id=exercise.id)
    base = debugging.canonical(exercise.solution_path.read_text(encoding="utf-8")).split("\n")
    stale = [n for p in singles for n, old in zip(p.lines, p.old) if n > len(base) or base[n - 1] != old]
    if stale:
        return _bad("plants", "devcheck.plants_stale", id=exercise.id, lines=", ".join(map(str, stale)))
    return _ok("plants", "devcheck.plants_ok", count=len(singles), pairs=len(pairs),
               mistakes=len({p.mistake for p in singles}))


def findings(exercise_id: str, *, grade_corpus: bool = True) -> Iterator[Finding]:
    """Every rule of the registry's self-check for one exercise, as findings (a generator: the
    command shows each as it comes; grading takes a second a file)."""
    folder = exercises.HERE / exercise_id
    if not (folder / "exercise.toml").is_file():
        yield _bad("folder", "devcheck.no_folder", path=_shown(folder / "exercise.toml"))
        return
    try:
        exercise = exercises._load(folder)
    except exercises.ExerciseDataError as exc:  # the file and the field: say it and stop, the rest needs it
        yield _bad("folder", f"devcheck.data_{exc.problem}", path=exc.path, **exc.params)
        return
    except Exception as exc:  # anything else the loader met (a mistakes.toml of its own that does not read …)
        yield _bad("folder", "devcheck.folder_unreadable", path=_shown(folder / "exercise.toml"),
                   error=f"{type(exc).__name__}: {exc}")
        return
    yield _ok("folder", "devcheck.folder_ok", kind=exercise.contract.kind)
    if not exercise.solution_path.is_file():
        yield _bad("solution", "devcheck.no_solution", path=_shown(exercise.solution_path))
        return
    try:
        yield from _text_findings(exercise)
    except exercises.ExerciseDataError as exc:  # a zh.toml or mistakes.zh.toml that does not read
        yield _bad("texts", f"devcheck.data_{exc.problem}", path=exc.path, **exc.params)
        return

    from attnprep.grader import grade
    from attnprep.grader.kinds import UnknownKind, kind_for
    from attnprep.grader.kinds.base import GradingError

    try:
        kind_for(exercise)
    except UnknownKind:
        yield _bad("folder", "devcheck.unknown_kind", kind=exercise.contract.kind)
        return
    except GradingError as exc:
        said = {"kind": exercise.contract.kind, "unknown": ", ".join(exc.unknown) or "-", "missing": ", ".join(exc.missing) or "-"}
        if exc.where.startswith(("configs", "probe_configs")):  # one entry of its configs
            yield _bad("folder", "devcheck.config_keys", where=exc.where, wrong=", ".join(exc.wrong) or "-", **said)
        elif exc.where.startswith(("cases", "outputs")):  # its case data (a case, one of its inputs, the outputs)
            yield _bad("folder", "devcheck.case_keys", where=exc.where, wrong=", ".join(exc.wrong) or "-", **said)
        elif exc.where:  # another key of its [grading] table whose value the kind cannot use
            yield _bad("folder", "devcheck.grading_value", where=exc.where, kind=exercise.contract.kind,
                       wrong=", ".join(exc.wrong) or "-")
        else:
            yield _bad("folder", "devcheck.grading_keys", **said)
        return

    yield _listing_finding(exercise)
    yield _edits_finding(exercise)

    with tempfile.TemporaryDirectory(prefix="attnprep-dev-") as tmp:
        stub = Path(tmp) / exercise.filename
        for lang in LANGUAGES:  # the exercise's own texts in that language too, as `new` writes it
            stub.write_text(exercises.render_stub(exercises._load(folder, lang), lang), encoding="utf-8")
            result = grade(stub, exercise)
            if result.blank and not result.internal:
                yield _ok("stub", "devcheck.stub_ok", lang=lang)
            else:
                yield _bad("stub", "devcheck.stub_not_blank", lang=lang, verdict=result.verdict.value)
        shutil.copy(exercise.solution_path, stub)
        result = grade(stub, exercise)
        if result.passed:
            yield _ok("reference", "devcheck.reference_ok")
        else:
            failing = [c for c in result.checks if c.passed is False]
            failed = ", ".join(c.id for c in failing) or result.verdict.value
            # the first failed check's own words: which case, which probe ("row 1 alone" is the batch
            # probe: an input or output without a batch axis), so the data key at fault can be found
            detail = _said(failing[0].message) if failing else ""
            yield _bad("reference", "devcheck.reference_fails", verdict=result.verdict.value, checks=failed,
                       detail=detail or "-")

    yield _plants_finding(exercise)

    corpus = CORPUS / exercise_id
    if not CORPUS.is_dir():
        yield _bad("corpus", "devcheck.no_corpus_checkout", path=_shown(CORPUS))
        return
    files = sorted(corpus.glob("*.py"))
    headers = {path: corpus_header(path) for path in files}
    correct = [p for p, (expect, _) in headers.items() if expect == "passed"]
    if len(correct) < MIN_CORRECT:
        yield _bad("corpus", "devcheck.corpus_few_correct", path=_shown(corpus), count=len(correct), least=MIN_CORRECT)
    else:
        yield _ok("corpus", "devcheck.corpus_correct_ok", count=len(correct))
    named = {diagnosis for _, diagnosis in headers.values()}
    unnamed = [m.id for m in exercise.mistakes if m.id not in named]
    if unnamed:
        yield _bad("corpus", "devcheck.corpus_mistake_missing", path=_shown(corpus), ids=", ".join(unnamed))
    else:
        yield _ok("corpus", "devcheck.corpus_mistakes_ok", count=len(exercise.mistakes))
    headless = [p.name for p, (expect, _) in headers.items() if expect is None]
    if headless:
        yield _bad("corpus", "devcheck.corpus_no_header", files=", ".join(headless))
    elsewhere = [p.name for p in files if header_id(_first_line(p)) != exercise_id]
    if elsewhere:
        yield _bad("corpus", "devcheck.corpus_other_header", id=exercise_id, files=", ".join(elsewhere))
    if not grade_corpus:
        return
    for path, (expect, diagnosis) in headers.items():
        if expect is None:
            continue
        result = grade(path, exercise)
        ids = [d.id for d in result.diagnoses]
        if result.verdict.value == expect and sorted(ids) == sorted(diagnosis.split(" + ") if diagnosis else []):
            yield _ok("corpus", "devcheck.attempt_ok", file=path.name, verdict=expect)
        else:
            yield _bad("corpus", "devcheck.attempt_differs", file=path.name, expect=expect,
                       diagnosis=diagnosis or "-", verdict=result.verdict.value, named=", ".join(ids) or "-")


def generate_corpus(exercise_id: str, *, every: bool = False) -> Iterator[Finding]:
    """``attnprep dev corpus ID``: a corpus attempt for each mistake the exercise declares as an edit
    of its reference (``[grading] edits``) that no attempt of ``tests/corpus/<id>/`` names yet (or,
    with ``every``, for each edit): the reference with that edit, written as ``edit_<knob>.py`` with
    the verdict and the mistakes the grader gives it in its header, and only when the grader names
    the edit's mistake. An existing file is never replaced."""
    from attnprep.grader import grade
    from attnprep.grader.edits import EditError, edited_source

    exercise = exercises.get(exercise_id)
    corpus = CORPUS / exercise_id
    if not CORPUS.is_dir():
        yield _bad("corpus", "devcheck.no_corpus_checkout", path=_shown(CORPUS))
        return
    edits: dict[str, list[dict]] = dict(exercise.grading.get("edits", {}))
    if not edits:
        yield _bad("corpus", "devcheck.generate_no_edits", path=_shown(exercise.folder / "exercise.toml"))
        return
    named = {part.strip() for path in sorted(corpus.glob("*.py")) for part in (corpus_header(path)[1] or "").split("+")}
    source = exercise.solution_path.read_text(encoding="utf-8")
    wanted = [k for k in edits if every or (k.split(":")[0] not in named and ":" not in k)]
    if not wanted:
        yield _ok("corpus", "devcheck.generate_none", count=len(edits))
        return
    corpus.mkdir(parents=True, exist_ok=True)
    for knob in wanted:
        mistake = knob.split(":")[0]
        path = corpus / f"edit_{knob.replace(':', '_')}.py"
        if path.exists():
            yield _ok("corpus", "devcheck.generate_kept", file=_shown(path))
            continue
        try:
            body = edited_source(source, list(edits[knob]))
        except EditError as exc:
            yield _bad("corpus", "devcheck.generate_edit_broken", knob=knob, error=str(exc))
            continue
        with tempfile.TemporaryDirectory(prefix="attnprep-dev-") as tmp:
            attempt = Path(tmp) / exercise.filename
            attempt.write_text(f"# attnprep: {exercise_id}\n{body}", encoding="utf-8")
            result = grade(attempt, exercise)
        ids = [d.id for d in result.diagnoses]
        if result.passed or mistake not in ids:
            yield _bad("corpus", "devcheck.generate_not_named", knob=knob, verdict=result.verdict.value,
                       named=", ".join(ids) or "-")
            continue
        head = (f"# attnprep: {exercise_id}\n# expect: {result.verdict.value}\n# diagnosis: {' + '.join(ids)}\n"
                f'"""Written by `attnprep dev corpus {exercise_id}`: the reference with the edit of {knob}."""\n')
        path.write_text(head + body, encoding="utf-8")
        yield _ok("corpus", "devcheck.generate_written", file=_shown(path), verdict=result.verdict.value, named=" + ".join(ids))

"""The local history: every `check`, drill and interview, in SQLite, and what it says about progress.

One row per run (a `check` of one file, or one whole drill) in ``paths.history_db()``
(``$ATTNPREP_HOME/history.sqlite3`` when set, read at call time); an interview round is a row of
``interviews`` whose submissions are runs (the first with ``first_try``), and each Q&A card marked
known / not known a row of ``qa_marks``. Durability rules:

- WAL journal, one short transaction per write (:func:`record`, :func:`open_interview`,
  :func:`mark_card` …): a process killed at any moment (even
  SIGKILL mid-commit) loses at most the run it was recording; every committed run survives.
- The schema grows by small named migrations (:data:`migrations`), applied in order and recorded
  in the ``migrations`` table; a migration is applied in the same transaction as its record.
- A corrupt or unreadable database file is moved aside (``history.sqlite3.corrupt-<timestamp>``,
  with its ``-wal``/``-shm`` companions), one line says so on stderr, and a fresh database is
  started. A database that is only *busy* (another attnprep writing) is waited for, and if it
  stays unusable the run is not recorded (one line on stderr) — the command itself never fails
  because of its history.

Torch-free: `stats` and `list` read the history without importing torch. Its records are
NamedTuples, cheap to define (see :mod:`attnprep.exercises`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from attnprep import loop, paths, texts

if TYPE_CHECKING:
    from attnprep.exercises import Exercise
    from attnprep.grader.result import Result

Kind = Literal["check", "drill"]
OUTCOMES = ("passed", "timeout", "abandoned")
RECENT = 12  # drill times kept for the sparkline
TOP_MISTAKES = 3
BUSY_TIMEOUT_S = 5.0

# Named schema migrations, applied in order; never edit a published one, append a new one.
migrations: list[tuple[str, str]] = [
    (
        "0001_create_runs",
        """
        CREATE TABLE runs (
            id          INTEGER PRIMARY KEY,
            exercise    TEXT    NOT NULL,
            file        TEXT    NOT NULL,
            kind        TEXT    NOT NULL CHECK (kind IN ('check', 'drill')),
            started_at  REAL    NOT NULL,          -- unix time
            duration_s  REAL    NOT NULL,
            verdict     TEXT    NOT NULL,          -- Verdict value (0003: the token, 'wrong_output' ...)
            diagnoses   TEXT    NOT NULL DEFAULT '[]',  -- JSON list of mistake ids
            passed      INTEGER NOT NULL CHECK (passed IN (0, 1)),
            outcome     TEXT    CHECK (outcome IS NULL OR outcome IN ('passed', 'timeout', 'abandoned'))
        );
        """,
    ),
    (
        "0002_index_runs_by_exercise",
        "CREATE INDEX runs_by_exercise ON runs (exercise, started_at);",
    ),
    (
        # Verdicts were stored as their English label ('wrong output'); from here on as the token
        # of `check --json` ('wrong_output'), whose words depend on the language.
        "0003_verdict_tokens",
        """
        UPDATE runs SET verdict = CASE verdict
            WHEN 'wrong output' THEN 'wrong_output'
            WHEN 'wrong shape' THEN 'wrong_shape'
            WHEN 'mask leak' THEN 'mask_leak'
            WHEN 'used a built-in' THEN 'used_builtin'
            WHEN 'syntax error' THEN 'syntax_error'
            ELSE verdict END;
        """,
    ),
    (
        # attnprep interview: one row per interview round; each submission of it is a
        # run of kind 'check' that names the interview, the first one with first_try = 1 (the
        # verdict that counts), later fixes with first_try = 0. Q&A cards are marked per card.
        "0004_interviews_and_qa_marks",
        """
        CREATE TABLE interviews (
            id          INTEGER PRIMARY KEY,
            exercise    TEXT    NOT NULL,
            file        TEXT    NOT NULL,
            started_at  REAL    NOT NULL,          -- unix time the clock started
            budget_s    REAL    NOT NULL,
            outcome     TEXT    NOT NULL DEFAULT 'open' CHECK (outcome IN ('open', 'submitted', 'abandoned')),
            duration_s  REAL                       -- time to the first submission (or until abandoned)
        );
        ALTER TABLE runs ADD COLUMN interview INTEGER REFERENCES interviews (id);
        ALTER TABLE runs ADD COLUMN first_try INTEGER CHECK (first_try IS NULL OR first_try IN (0, 1));
        CREATE TABLE qa_marks (
            id          INTEGER PRIMARY KEY,
            exercise    TEXT    NOT NULL,
            card        INTEGER NOT NULL,          -- 1-based position in the exercise's Q&A
            question    TEXT    NOT NULL,          -- as shown, for a reader of the database
            known       INTEGER NOT NULL CHECK (known IN (0, 1)),
            marked_at   REAL    NOT NULL,          -- unix time
            interview   INTEGER REFERENCES interviews (id)
        );
        CREATE INDEX qa_marks_by_card ON qa_marks (exercise, card, marked_at);
        """,
    ),
    (
        # A drill's own time budget (`drill --minutes 2`). NULL for a check, and for a drill recorded
        # before this migration: it ran on its exercise's budget, the only one drills had then.
        "0005_runs_budget",
        "ALTER TABLE runs ADD COLUMN budget_s REAL CHECK (budget_s IS NULL OR budget_s > 0);",
    ),
    (
        # attnprep debug: one row per debug round (a file with named mistakes planted in it). What was
        # planted is kept for `debug --reveal`; found = planted mistakes no longer named at the end.
        "0006_debug_rounds",
        """
        CREATE TABLE debug_rounds (
            id          INTEGER PRIMARY KEY,
            exercise    TEXT    NOT NULL,
            file        TEXT    NOT NULL,
            seed        INTEGER NOT NULL,
            planted     TEXT    NOT NULL,          -- JSON list of {mistake, line, code, fixed}
            started_at  REAL    NOT NULL,          -- unix time the file was written
            budget_s    REAL    NOT NULL,
            outcome     TEXT    NOT NULL DEFAULT 'open' CHECK (outcome IN ('open', 'passed', 'timeout', 'abandoned')),
            duration_s  REAL,
            found       INTEGER
        );
        CREATE INDEX debug_rounds_by_file ON debug_rounds (file, started_at);
        """,
    ),
]

# SQLite primary result codes that mean "this file is not a usable database".
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_HEADER = b"SQLite format 3\x00"


class HistoryUnavailable(Exception):
    """The database could not be used (busy for too long, no permission …); not corruption."""


# --- values --------------------------------------------------------------------------------------


class Run(NamedTuple):
    """One recorded run, as stored."""

    id: int
    exercise: str
    file: str
    kind: Kind
    started_at: float
    duration_s: float
    verdict: str
    diagnoses: tuple[str, ...]
    passed: bool
    outcome: str | None
    interview: int | None = None  # the interview this run is a submission of
    first_try: bool | None = None  # of an interview: True for the first submission, False for a later fix
    budget_s: float | None = None  # a drill's own budget (None: a check, or an older drill: its exercise's)


class RecentDrill(NamedTuple):
    duration_s: float
    outcome: str  # "passed", "timeout" or "abandoned"
    budget_s: float | None  # its own budget, else the exercise's default, else None (unknown)

    @property
    def ratio(self) -> float | None:
        """The time it took against its budget (1.0 = the whole budget)."""
        return self.duration_s / self.budget_s if self.budget_s else None


class Interview(NamedTuple):
    """One interview round, as stored."""

    id: int
    exercise: str
    file: str
    started_at: float
    budget_s: float
    outcome: str  # 'open', 'submitted' or 'abandoned'
    duration_s: float | None  # time to the first submission (or until abandoned)


class QAMark(NamedTuple):
    """One Q&A card marked known / not known."""

    exercise: str
    card: int  # 1-based position in the exercise's Q&A
    question: str
    known: bool
    marked_at: float
    interview: int | None


class ExerciseSummary(NamedTuple):
    """What the history says about one exercise (every field is plain data, JSON-ready)."""

    exercise: str
    attempts: int  # checks + drills
    passes: int
    drills: int  # drills that ended (passed / timeout / abandoned)
    drill_passes: int
    best_drill_s: float | None  # fastest passed drill
    median_drill_s: float | None  # median of the passed drills
    recent_drills: tuple[RecentDrill, ...]  # the last drills, abandoned ones too, oldest first
    top_mistakes: tuple[tuple[str, int], ...]  # (mistake id, count), most frequent first
    last_verdict: str | None
    last_at: float | None  # unix time of the last run's start
    # Against each drill's own budget (a drill recorded without one: its exercise's default, when
    # the summary was given it). None when unknown.
    best_drill_budget_s: float | None = None  # the budget of the fastest passed drill
    best_vs_budget: float | None = None  # that drill's time / its budget
    median_vs_budget: float | None = None  # median over the passed drills of time / own budget
    median_drill_budget_s: float | None = None  # the budget every passed drill had, if they share one

    @property
    def pass_rate(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0

    @property
    def status(self) -> str:
        """'passed', 'attempted' or 'new'."""
        return "passed" if self.passes else "attempted" if self.attempts else "new"

    @property
    def recent_drill_s(self) -> tuple[float, ...]:
        """Durations of the recent passed drills, oldest first."""
        return tuple(d.duration_s for d in self.recent_drills if d.outcome == "passed")

    def to_json(self) -> dict:
        return {
            "exercise": self.exercise,
            "status": self.status,
            "attempts": self.attempts,
            "passes": self.passes,
            "pass_rate": round(self.pass_rate, 4),
            "drills": self.drills,
            "drill_passes": self.drill_passes,
            "best_drill_s": _round(self.best_drill_s),
            "best_drill_budget_s": _round(self.best_drill_budget_s),
            "median_drill_s": _round(self.median_drill_s),
            "median_drill_budget_s": _round(self.median_drill_budget_s),
            "best_vs_budget": _round3(self.best_vs_budget),
            "median_vs_budget": _round3(self.median_vs_budget),
            "recent_drills": [{"duration_s": round(d.duration_s, 2), "outcome": d.outcome, "budget_s": _round(d.budget_s)}
                              for d in self.recent_drills],
            "top_mistakes": [{"id": m, "count": n} for m, n in self.top_mistakes],
            "last_verdict": self.last_verdict,
            "last_at": self.last_at,
        }


def empty_summary(exercise_id: str) -> ExerciseSummary:
    return ExerciseSummary(exercise_id, 0, 0, 0, 0, None, None, (), (), None, None)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _round3(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


# --- the database --------------------------------------------------------------------------------


def _warn(message: str) -> None:
    """The one line the user sees about the history (never a traceback)."""
    sys.stderr.write(f"attnprep: {message}\n")
    sys.stderr.flush()


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "not readable" in text


def _statements(sql: str) -> Iterator[str]:
    """Split a migration's SQL into complete statements."""
    buffer = ""
    for piece in sql.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n\t;"):
                yield buffer.strip()
            buffer = ""


def _open(db: Path) -> sqlite3.Connection:
    """Connect, switch to WAL, check the file is sound and apply pending migrations."""
    conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)  # explicit transactions
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against a killed process in WAL mode (only power loss can drop the last
        # commits, and it never corrupts); FULL would fsync every record for no gain here.
        conn.execute("PRAGMA synchronous=NORMAL")
        check = conn.execute("PRAGMA quick_check").fetchone()
        if not check or check[0] != "ok":
            raise sqlite3.DatabaseError(f"database disk image is malformed ({check[0] if check else 'no answer'})")
        _migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    applied = {name for (name,) in conn.execute("SELECT name FROM migrations")}
    if all(name in applied for name, _ in migrations):
        return
    conn.execute("BEGIN IMMEDIATE")  # another process may be migrating: re-read under the lock
    try:
        applied = {name for (name,) in conn.execute("SELECT name FROM migrations")}
        for name, sql in migrations:
            if name in applied:
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _move_aside(db: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = db.with_name(f"{db.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = db.with_name(f"{db.name}.corrupt-{stamp}-{n}")
    db.replace(aside)
    for suffix in ("-wal", "-shm"):  # a stale WAL must not be replayed into the fresh database
        companion = db.with_name(db.name + suffix)
        if companion.exists():
            companion.replace(aside.with_name(aside.name + suffix))
    return aside


def _precheck(db: Path) -> None:
    """Refuse a file that is plainly not a database before SQLite opens it (opening would delete
    or replay its ``-wal`` companion, which should be kept aside as found)."""
    if not db.is_file():
        return
    if not os.access(db, os.R_OK | os.W_OK):
        raise sqlite3.DatabaseError("file is not readable and writable")
    with open(db, "rb") as f:
        header = f.read(len(_HEADER))
    if header and header != _HEADER:
        raise sqlite3.DatabaseError("file is not a database")


def _why(exc: sqlite3.DatabaseError, db: Path) -> str:
    """SQLite's reason, or the plainer one behind its "unable to open database file"."""
    if not os.access(db.parent, os.W_OK):
        return texts.t("sys.folder_not_writable", folder=db.parent)
    return str(exc)


def connect(db: Path | None = None) -> sqlite3.Connection:
    """An open, migrated connection to the history; a corrupt file is moved aside first.

    Raises :class:`HistoryUnavailable` when the database cannot be used for another reason
    (locked for longer than the busy timeout, folder not writable …)."""
    db = paths.history_db() if db is None else db
    try:
        _precheck(db)
        return _open(db)
    except sqlite3.DatabaseError as exc:
        if not _is_corruption(exc):
            raise HistoryUnavailable(texts.t("sys.history_unusable", db=db, reason=_why(exc, db))) from None
        try:
            aside = _move_aside(db)
        except OSError as move_error:
            raise HistoryUnavailable(texts.t("sys.history_corrupt", db=db, error=move_error)) from None
        _warn(texts.t("sys.history_moved", error=exc, aside=aside))
    try:
        return _open(db)
    except sqlite3.DatabaseError as exc:
        raise HistoryUnavailable(texts.t("sys.history_unusable", db=db, reason=exc)) from None


@contextlib.contextmanager
def _database() -> Iterator[sqlite3.Connection]:
    conn = connect()
    try:
        yield conn
    finally:
        conn.close()


# --- writing -------------------------------------------------------------------------------------


def record(
    result: Result,
    *,
    kind: Kind,
    started_at: float,
    duration_s: float,
    outcome: str | None = None,
    mistakes: Iterable[str] = (),
    interview: int | None = None,
    first_try: bool | None = None,
    budget_s: float | None = None,
) -> int | None:
    """Record one run in its own transaction; returns its row id, or None if the history is
    unusable (said on stderr; the caller's command goes on).

    ``outcome`` and ``budget_s`` are for drills: 'passed', 'timeout' or 'abandoned', and the time
    budget it ran on. ``mistakes``: mistake ids seen earlier in the run (a drill's intermediate
    saves), stored with the final result's diagnoses so that `stats` counts the mistakes a drill
    fixed on the way. ``first_try``: a submission of an interview (a check): True for the first
    one, whose verdict counts, False for a later fix; ``interview`` is its row of
    :func:`open_interview` (None if that could not be recorded)."""
    if kind not in ("check", "drill"):
        raise ValueError(f"kind must be 'check' or 'drill', not {kind!r}")
    if outcome is not None and outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
    if (interview is not None or first_try is not None) and (kind != "check" or first_try is None):
        raise ValueError("an interview's submission is a check with first_try set")
    ids = list(dict.fromkeys([*mistakes, *(d.id for d in result.diagnoses)]))
    row = (
        result.exercise,
        _storable(result.file),
        kind,
        float(started_at),
        float(duration_s),
        result.verdict.value,
        json.dumps(ids),
        int(result.passed),
        outcome,
        interview,
        None if first_try is None else int(first_try),
        None if budget_s is None else float(budget_s),
    )
    return _write(
        "INSERT INTO runs (exercise, file, kind, started_at, duration_s, verdict, diagnoses, passed, outcome,"
        " interview, first_try, budget_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row,
        "sys.run_not_recorded",
    )


def _storable(path: str | Path) -> str:
    """A path as SQLite can store it: a file name that is not UTF-8 (its bytes kept by Python as
    lone surrogates) is written with backslash escapes (``mha\\udcff.py``)."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def _write(sql: str, row: tuple, failure: str) -> int | None:
    """One statement in its own transaction; the new row's id, or None (said on stderr with the text
    ``failure``) when the history is unusable."""
    try:
        with _database() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                cursor = conn.execute(sql, row)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            return cursor.lastrowid
    except (HistoryUnavailable, sqlite3.Error, OSError) as exc:
        _warn(texts.t("sys.not_recorded", failure=texts.t(failure), error=exc))
        return None


def open_interview(exercise: str, file: str | Path, *, started_at: float, budget_s: float) -> int | None:
    """Record the start of an interview round; its row id (None: the history is unusable)."""
    return _write(
        "INSERT INTO interviews (exercise, file, started_at, budget_s) VALUES (?, ?, ?, ?)",
        (exercise, _storable(file), float(started_at), float(budget_s)),
        "sys.interview_not_recorded",
    )


def close_interview(interview: int, *, outcome: str, duration_s: float) -> None:
    """Say how an open interview ended: 'submitted' (``duration_s`` to the first submission) or
    'abandoned'. Only an open interview changes: the first submission is never rewritten."""
    if outcome not in ("submitted", "abandoned"):
        raise ValueError(f"outcome must be 'submitted' or 'abandoned', not {outcome!r}")
    _write(
        "UPDATE interviews SET outcome = ?, duration_s = ? WHERE id = ? AND outcome = 'open'",
        (outcome, float(duration_s), interview),
        "sys.interview_end_not_recorded",
    )


def mark_card(exercise: str, card: int, question: str, *, known: bool, marked_at: float, interview: int | None = None) -> int | None:
    """Record one Q&A card marked known / not known."""
    return _write(
        "INSERT INTO qa_marks (exercise, card, question, known, marked_at, interview) VALUES (?, ?, ?, ?, ?, ?)",
        (exercise, int(card), question, int(known), float(marked_at), interview),
        "sys.answer_not_recorded",
    )


def open_debug(exercise: str, file: str | Path, *, seed: int, planted: list[dict], started_at: float, budget_s: float) -> int | None:
    """Record a debug round as its file is written; its row id (None: the history is unusable)."""
    return _write(
        "INSERT INTO debug_rounds (exercise, file, seed, planted, started_at, budget_s) VALUES (?, ?, ?, ?, ?, ?)",
        (exercise, str(file), int(seed), json.dumps(planted), float(started_at), float(budget_s)),
        "sys.debug_not_recorded",
    )


def close_debug(round_id: int, *, outcome: str, duration_s: float, found: int) -> None:
    """Say how a debug round ended: 'passed', 'timeout' or 'abandoned', and how many of its planted
    mistakes were fixed."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
    _write(
        "UPDATE debug_rounds SET outcome = ?, duration_s = ?, found = ? WHERE id = ? AND outcome = 'open'",
        (outcome, float(duration_s), int(found), round_id),
        "sys.debug_not_recorded",
    )


# --- reading -------------------------------------------------------------------------------------


def _read(query: str, args: tuple = ()) -> list[tuple]:
    """Rows of a query; an unusable history reads as empty, and reading never creates it."""
    if not paths.history_db().exists():
        return []
    try:
        with _database() as conn:
            return conn.execute(query, args).fetchall()
    except (HistoryUnavailable, sqlite3.Error, OSError) as exc:
        _warn(texts.t("sys.history_unavailable", error=exc))
        return []


def runs(exercise: str | None = None) -> list[Run]:
    """Every recorded run (of one exercise), oldest first. An unusable history reads as empty."""
    query = ("SELECT id, exercise, file, kind, started_at, duration_s, verdict, diagnoses, passed, outcome,"
             " interview, first_try, budget_s FROM runs")
    args: tuple = ()
    if exercise is not None:
        query += " WHERE exercise = ?"
        args = (exercise,)
    query += " ORDER BY started_at, id"
    return [
        Run(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(_load_ids(r[7])), bool(r[8]), r[9], r[10],
            None if r[11] is None else bool(r[11]), r[12])
        for r in _read(query, args)
    ]


def interviews() -> list[Interview]:
    """Every interview round, oldest first."""
    rows = _read("SELECT id, exercise, file, started_at, budget_s, outcome, duration_s FROM interviews ORDER BY started_at, id")
    return [Interview(*r) for r in rows]


def qa_marks(exercise: str | None = None) -> list[QAMark]:
    """Every Q&A card marked (of one exercise), oldest first."""
    query = "SELECT exercise, card, question, known, marked_at, interview FROM qa_marks"
    args: tuple = ()
    if exercise is not None:
        query += " WHERE exercise = ?"
        args = (exercise,)
    rows = _read(query + " ORDER BY marked_at, id", args)
    return [QAMark(r[0], r[1], r[2], bool(r[3]), r[4], r[5]) for r in rows]


class DebugRound(NamedTuple):
    id: int
    exercise: str
    file: str
    seed: int
    planted: list[dict]
    started_at: float
    budget_s: float
    outcome: str  # open, passed, timeout, abandoned
    duration_s: float | None
    found: int | None


def debug_rounds(file: str | Path | None = None) -> list[DebugRound]:
    """Every debug round (of one file), oldest first."""
    query = "SELECT id, exercise, file, seed, planted, started_at, budget_s, outcome, duration_s, found FROM debug_rounds"
    args: tuple = ()
    if file is not None:
        query, args = query + " WHERE file = ?", (str(file),)
    rows = []
    for row in _read(query + " ORDER BY started_at, id", args):
        try:
            planted = json.loads(row[4])
        except ValueError:
            planted = []
        rows.append(DebugRound(row[0], row[1], row[2], row[3], planted if isinstance(planted, list) else [], *row[5:]))
    return rows


def _load_ids(text: str) -> list[str]:
    try:
        ids = json.loads(text)
    except ValueError:
        return []
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def summarize(exercise_id: str, exercise_runs: list[Run], default_budget_s: float | None = None) -> ExerciseSummary:
    """The summary of one exercise's runs (oldest first). ``default_budget_s``: the budget of a
    drill recorded without its own (the exercise's), for the times against the budget."""
    if not exercise_runs:
        return empty_summary(exercise_id)
    import statistics  # here: `attnprep list` reads the history too, and should not wait for it

    drills = [
        RecentDrill(r.duration_s, r.outcome or "abandoned", r.budget_s or default_budget_s)
        for r in exercise_runs if r.kind == "drill"
    ]
    passed = [d for d in drills if d.outcome == "passed"]
    passed_times = [d.duration_s for d in passed]
    best = min(passed, key=lambda d: d.duration_s, default=None)
    ratios = [d.ratio for d in passed]
    budgets = {d.budget_s for d in passed}
    mistakes = Counter(m for r in exercise_runs for m in r.diagnoses)
    last = exercise_runs[-1]
    return ExerciseSummary(
        exercise=exercise_id,
        attempts=len(exercise_runs),
        passes=sum(r.passed for r in exercise_runs),
        drills=len(drills),
        drill_passes=len(passed_times),
        best_drill_s=min(passed_times) if passed_times else None,
        median_drill_s=statistics.median(passed_times) if passed_times else None,
        recent_drills=tuple(drills[-RECENT:]),
        top_mistakes=tuple(sorted(mistakes.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_MISTAKES]),
        last_verdict=last.verdict,
        last_at=last.started_at,
        best_drill_budget_s=best.budget_s if best is not None else None,
        best_vs_budget=best.ratio if best is not None else None,
        median_vs_budget=statistics.median(ratios) if ratios and None not in ratios else None,
        median_drill_budget_s=next(iter(budgets)) if len(budgets) == 1 else None,
    )


def exercise_summaries(default_budgets: dict[str, float] | None = None) -> dict[str, ExerciseSummary]:
    """A summary per exercise that has at least one recorded run (exercise ids as recorded).
    ``default_budgets``: each exercise's budget in seconds, for drills recorded without their own."""
    by_exercise: dict[str, list[Run]] = {}
    for run in runs():
        by_exercise.setdefault(run.exercise, []).append(run)
    budgets = default_budgets or {}
    return {ex: summarize(ex, rs, budgets.get(ex)) for ex, rs in by_exercise.items()}


# --- what to practise next -----------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour)."""
    total = int(round(seconds))
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _ago(seconds: float) -> str:
    if seconds < 120:
        return texts.t("weakest.just_now")
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return texts.t(f"weakest.{unit}_ago_1" if n == 1 else f"weakest.{unit}_ago", n=n)
    return texts.t("weakest.just_now")


def pick_weakest(
    exercises: Iterable[Exercise],
    summaries: dict[str, ExerciseSummary] | None = None,
    *,
    now: float | None = None,
) -> tuple[str, str]:
    """The exercise to drill next and why, in this order:

    1. never passed (by a check or a drill), in the order given (teaching order);
    2. the worst best-drill-time / budget ratio (passed, but never inside a drill counts as worst);
    3. on a tie, the one practised longest ago.
    """
    exercises = list(exercises)
    if not exercises:
        raise ValueError("no exercises to pick from")
    if summaries is None:
        summaries = exercise_summaries({ex.id: loop.budget_s(ex) for ex in exercises})
    now = time.time() if now is None else now

    def summary(ex: Exercise) -> ExerciseSummary:
        return summaries.get(ex.id) or empty_summary(ex.id)

    for ex in exercises:
        s = summary(ex)
        if not s.passes:
            if not s.attempts:
                return ex.id, texts.t("weakest.never_attempted", id=ex.id)
            tries = texts.t("weakest.attempts_1" if s.attempts == 1 else "weakest.attempts", n=s.attempts)
            return ex.id, texts.t("weakest.never_passed", id=ex.id, tries=tries, verdict=texts.t(f"verdict.{s.last_verdict}"))

    def budget(ex: Exercise) -> float:
        """The budget the best drill ran on (its own; else the exercise's)."""
        return summary(ex).best_drill_budget_s or loop.budget_s(ex)

    def ratio(ex: Exercise) -> float:
        best = summary(ex).best_drill_s
        return float("inf") if best is None else best / budget(ex)

    weakest = max(exercises, key=lambda ex: (ratio(ex), -(summary(ex).last_at or 0.0)))
    s = summary(weakest)
    if s.best_drill_s is None:
        why = texts.t("weakest.no_drill", id=weakest.id, budget=format_duration(loop.budget_s(weakest)))
    else:
        why = texts.t("weakest.worst_ratio", id=weakest.id, best=format_duration(s.best_drill_s),
                      budget=format_duration(budget(weakest)), ratio=ratio(weakest))
    ties = [ex for ex in exercises if ex is not weakest and ratio(ex) == ratio(weakest)]
    if ties and s.last_at is not None:
        why += texts.t("weakest.tied", ago=_ago(now - s.last_at))
    return weakest.id, why

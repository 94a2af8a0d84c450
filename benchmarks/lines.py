"""How often the divergence line is within one line of the bug (issue 24's line accuracy).

Two sources of files whose bug line is known:

- planted: ``attnprep debug``'s rounds (:func:`attnprep.debugging.plant`), the exercise's reference
  with one verified mistake planted (seeds 1-6) or a verified pair of them (seeds 1-3); the round
  knows its planted line(s), as ``attnprep debug --reveal`` lists them. Identical files are
  graded once.
- corpus: failing attempts of tests/corpus/<exercise>/ whose LAST line is ``# bug-line: N`` (or
  ``N, M`` when the attempt goes wrong on several lines): the line where it really goes wrong, read
  by hand. The last line, so that the header lines 1-3 and every other line number stay as they are.

A failing file counts when the grader gives it a divergence line; it is *within* when that line is
at most one line away from a bug line (of either, for two bugs), else *off*.

    python benchmarks/lines.py [--only mha,norms] [--source planted|corpus] [--json]
    python benchmarks/lines.py --round benchmarks/heldout_24_round3.txt

``--round FILE``: the annotated attempts a held-out round lists (see corpus_names.py), by class.

It prints nothing but the table (or the JSON) and the off lines; exit code 1 when a planted or
annotated file is not failed, or when an annotation is unreadable (not a line of the file).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
SINGLE_SEEDS = range(1, 7)
PAIR_SEEDS = range(1, 4)
TOLERANCE = 1
BUG_LINE = re.compile(r"#\s*bug-line:\s*(\d+(?:\s*,\s*\d+)*)\s*$")


def bug_lines(path: Path) -> tuple[int, ...]:
    """The ``# bug-line: N[, M]`` annotation of a corpus file (its last non-empty line), or ()."""
    lines = path.read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
    match = BUG_LINE.match(lines[-1].strip()) if lines else None
    return tuple(int(n) for n in match.group(1).split(",")) if match else ()


def planted_files(exercise) -> list[tuple[str, str, tuple[int, ...], str]]:
    """(label, source, bug lines, mistakes) of the exercise's debug rounds, identical files once."""
    from attnprep import debugging

    singles, pairs = debugging.load_plants(exercise)
    if not singles:
        return []
    seen, found = set(), []
    rounds = [(seed, 1) for seed in SINGLE_SEEDS] + ([(seed, 2) for seed in PAIR_SEEDS] if pairs else [])
    for seed, bugs in rounds:
        round_ = debugging.plant(exercise, seed, bugs)
        if round_.source in seen:
            continue
        seen.add(round_.source)
        lines = tuple(n for p in round_.planted for n in (p.lines or (p.line,)))
        found.append((f"seed {seed}" + (" (2 bugs)" if bugs == 2 else ""), round_.source, lines,
                      " + ".join(p.mistake for p in round_.planted)))
    return found


def _count(row: dict, label: str, result, expected: tuple[int, ...], mistakes: str) -> None:
    if result.passed or result.internal:
        row["not_failed"].append(label)
        return
    row["failing"] += 1
    d = result.divergence
    if d is None:
        return
    row["with_line"] += 1
    if min(abs(d.line - n) for n in expected) <= TOLERANCE:
        row["within"] += 1
    else:
        row["off"].append({"file": label, "got": d.line, "code": d.code, "reason": d.reason,
                           "expected": list(expected), "mistakes": mistakes})


def _row() -> dict:
    return {"failing": 0, "with_line": 0, "within": 0, "off": [], "not_failed": []}


def measure_round(groups: dict[str, list[Path]]) -> dict[str, dict[str, dict]]:
    """The corpus source on a held-out round's attempts only, a row per class."""
    from attnprep import exercises
    from attnprep.grader import grade

    rows: dict[str, dict] = {}
    for group, paths in groups.items():
        row = rows[group] = _row()
        for path in paths:
            expected = bug_lines(path)
            if expected:
                exercise = path.relative_to(CORPUS).parts[0]  # (an attempt may sit in a folder of its exercise's)
                _count(row, path.relative_to(CORPUS).as_posix(), grade(path, exercises.get(exercise)), expected, "")
    return {"corpus": rows}


def measure(only: list[str] | None, sources: tuple[str, ...]) -> dict[str, dict[str, dict]]:
    from attnprep import exercises
    from attnprep.grader import grade

    rows: dict[str, dict[str, dict]] = {source: {} for source in sources}
    ids = [i for i in exercises.registry() if not only or i in only]
    with tempfile.TemporaryDirectory(prefix="attnprep-lines-") as tmp:
        for exercise_id in ids:
            exercise = exercises.get(exercise_id)
            if "planted" in sources:
                row = rows["planted"][exercise_id] = _row()
                for i, (label, source, expected, mistakes) in enumerate(planted_files(exercise)):
                    path = Path(tmp) / f"{exercise_id}-{i}.py"
                    path.write_text(source, encoding="utf-8")
                    _count(row, f"{exercise_id} {label}", grade(path, exercise), expected, mistakes)
            if "corpus" in sources:
                row = rows["corpus"][exercise_id] = _row()
                for path in sorted((CORPUS / exercise_id).glob("*.py")):
                    expected = bug_lines(path)
                    if not expected:
                        continue
                    label = f"{exercise_id}/{path.name}"
                    n_lines = len(path.read_text(encoding="utf-8").splitlines())
                    if any(not 1 <= n <= n_lines for n in expected):
                        row["not_failed"].append(f"{label} (bug-line outside the file)")
                        continue
                    _count(row, label, grade(path, exercise), expected, "")
    return rows


def _total(rows: dict[str, dict]) -> dict:
    return {k: sum(r[k] for r in rows.values()) for k in ("failing", "with_line", "within")}


def _percent(r: dict) -> str:
    return f"{100 * r['within'] / r['with_line']:.0f}%" if r["with_line"] else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated exercise ids")
    parser.add_argument("--source", choices=("planted", "corpus"), help="one source only (default: both)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--round", type=Path, help="a held-out round's listing: '<class> <exercise>/<file>' a line")
    args = parser.parse_args(argv)
    sources = ("corpus",) if args.round else (args.source,) if args.source else ("planted", "corpus")
    if args.round:
        from corpus_names import round_of

        rows = measure_round(round_of(args.round))
    else:
        rows = measure(args.only.split(",") if args.only else None, sources)
    totals = {source: _total(rows[source]) for source in sources}
    bad = [label for source in sources for r in rows[source].values() for label in r["not_failed"]]
    if args.json:
        print(json.dumps({"tolerance": TOLERANCE, "rows": rows, "total": totals}, indent=1))
        return 1 if bad else 0
    for source in sources:
        print(f"{source}:")
        print(f"| {'exercise':<18} | failing | with a line | within one line | rate | off |")
        print(f"|{'-' * 20}|---------|-------------|-----------------|------|-----|")
        for ex, r in [*rows[source].items(), ("total", totals[source])]:
            off = r["with_line"] - r["within"]
            print(f"| {ex:<18} | {r['failing']:>7} | {r['with_line']:>11} | {r['within']:>15} | {_percent(r):>4} | "
                  f"{off:>3} |")
        for r in rows[source].values():
            for o in r["off"]:
                print(f"  off: {o['file']}: line {o['got']} ({o['reason']}: {o['code'][:60]}) "
                      f"for {', '.join(map(str, o['expected']))}" + (f" [{o['mistakes']}]" if o["mistakes"] else ""))
        print()
    for label in bad:
        print(f"not failed: {label}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

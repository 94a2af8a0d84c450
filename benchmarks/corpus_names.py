"""How often the grader names the corpus's mistakes, and whether it ever names a wrong one.

Grades every attempt of tests/corpus/<exercise>/ (not hostile/) and compares the named mistakes with
the file's header (``# diagnosis: <id>`` or ``<id> + <id>``, lines 2-3). Per exercise:

- failing: attempts whose header expects a failure and names its mistake(s);
- named: those given exactly the header's mistake(s);
- wrong: attempts given a mistake id the header does not name (worse than none: issue 24);
- header: attempts whose verdict and names are what the header says (the corpus test's rule).

    python benchmarks/corpus_names.py [--only mha,norms] [--json]
    python benchmarks/corpus_names.py --round benchmarks/heldout_24.txt

``--round FILE`` measures one held-out round instead: the attempts FILE lists, one ``<class>
<exercise>/<file>`` a line (``#`` comments), in a table per class (a round is written before the
grader is fixed for it, and stays in the corpus afterwards).

It prints nothing but the table (or the JSON); exit code 1 when a header is not met.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def header(path: Path) -> tuple[str | None, list[str]]:
    expect, names = None, []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:3]:
        if line.startswith("# expect:"):
            expect = line.split(":", 1)[1].strip()
        elif line.startswith("# diagnosis:"):
            names = sorted(line.split(":", 1)[1].strip().split(" + "))
    return expect, names


def round_of(listing: Path) -> dict[str, list[Path]]:
    """The attempts of a held-out round, by class, as its listing gives them."""
    classes: dict[str, list[Path]] = {}
    for line in listing.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, attempt = line.split()
            classes.setdefault(name, []).append(CORPUS / attempt)
    return classes


def measure(only: list[str] | None, groups: dict[str, list[Path]] | None = None) -> dict[str, dict]:
    from attnprep.grader import grade

    if groups is None:
        folders = sorted(p for p in CORPUS.iterdir() if p.is_dir() and p.name != "hostile")
        groups = {f.name: sorted(f.glob("*.py")) for f in folders if not only or f.name in only}
    rows: dict[str, dict] = {}
    for group, paths in groups.items():
        row = rows[group] = {"attempts": 0, "failing": 0, "named": 0, "wrong": 0, "header": 0, "off": []}
        for path in paths:
            expect, names = header(path)
            if expect is None:
                continue
            result = grade(path)
            got = sorted(d.id for d in result.diagnoses)
            row["attempts"] += 1
            if expect != "passed" and names:
                row["failing"] += 1
                row["named"] += got == names
            if set(got) - set(names):
                row["wrong"] += 1
            if result.verdict.value == expect and got == names:
                row["header"] += 1
            else:
                row["off"].append(path.name)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated exercise ids")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--round", type=Path, help="a held-out round's listing: '<class> <exercise>/<file>' a line")
    args = parser.parse_args(argv)
    rows = measure(args.only.split(",") if args.only else None, round_of(args.round) if args.round else None)
    total = {k: sum(r[k] for r in rows.values()) for k in ("attempts", "failing", "named", "wrong", "header")}
    if args.json:
        print(json.dumps({"rows": rows, "total": total}, indent=1))
    else:
        print(f"| {'class' if args.round else 'exercise':<15} | attempts | failing, named | named | wrong names | header met |")
        print(f"|{'-' * 17}|----------|----------------|-------|-------------|------------|")
        for ex, r in [*rows.items(), ("total", total)]:
            rate = f"{100 * r['named'] / r['failing']:.0f}%" if r["failing"] else "-"
            named = f"{r['named']} of {r['failing']}"
            print(f"| {ex:<15} | {r['attempts']:>8} | {named:>14} | {rate:>5} | {r['wrong']:>11} | "
                  f"{r['header']:>10} |")
    return 0 if total["header"] == total["attempts"] else 1


if __name__ == "__main__":
    sys.exit(main())

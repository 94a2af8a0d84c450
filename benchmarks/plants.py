"""Generate ``exercises/<id>/plants.toml``: the verified mistakes ``attnprep debug`` plants.

A plant is a one-line edit of the exercise's canonical reference (:func:`attnprep.debugging.canonical`)
taken from the mutation generator (benchmarks/mutation.py) and kept only when the real grader, on
the edited file, fails it and names exactly one mistake that the exercise lists. Pairs of plants
(two mistakes on two lines) are kept only when the grader names both. Run it after adding an
exercise or changing a reference (``attnprep debug`` says when a plants file is stale):

    python benchmarks/plants.py [--exercise ID ...] [--per-mistake 3] [--pairs 12]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mutation  # noqa: E402  (benchmarks/mutation.py: the one-site AST mutants)

from attnprep import debugging, exercises  # noqa: E402


def _multi_line_edit(base: list[str], text: str, most: int = 3) -> tuple | None:
    """The lines an edit changed, when it keeps the line count and changes at most ``most``."""
    lines = text.split("\n")
    if len(lines) != len(base):
        return None
    changed = [i for i, (a, b) in enumerate(zip(base, lines)) if a != b]
    if not changed or len(changed) > most:
        return None
    return tuple(i + 1 for i in changed), tuple(base[i] for i in changed), tuple(lines[i] for i in changed)


def _declared_edits(exercise, base: list[str]) -> list[tuple[str, tuple]]:
    """The exercise's own named mistakes as edits of the reference ([grading] edits, kinds that
    grade by edits): (mistake id, (lines, old, new)) for each that changes a few lines in place."""
    from attnprep.grader.edits import EditError, edited_source

    source = exercise.solution_path.read_text(encoding="utf-8")
    found = []
    for knob, edits in exercise.grading.get("edits", {}).items():
        try:
            text = debugging.canonical(edited_source(source, list(edits)))
        except (EditError, SyntaxError):
            continue
        change = _multi_line_edit(base, text)
        if change is not None:
            found.append((knob.split(":")[0], change))
    return found


def _graded_names(folder: Path, exercise_id: str, lines: list[str]) -> list[str] | None:
    from attnprep.grader import grade

    path = folder / f"{exercise_id}.py"
    path.write_text(f"# attnprep: {exercise_id}\n" + "\n".join(lines) + "\n", encoding="utf-8")
    result = grade(path, exercise_id, seed=0)
    if result.passed or result.internal:
        return None
    return [d.id for d in result.diagnoses]


def generate(exercise_id: str, per_mistake: int, max_pairs: int, log=print) -> dict:
    exercise = exercises.get(exercise_id)
    listed = {m.id for m in exercise.mistakes}
    base = debugging.canonical(exercise.solution_path.read_text(encoding="utf-8"))
    base_lines = base.split("\n")
    edits = [change for _, change in _declared_edits(exercise, base_lines)]
    for m in mutation.generate(exercise_id, base):
        text = m.source.split("\n", 1)[1].rstrip("\n")
        change = _multi_line_edit(base_lines, text, most=1)
        if change is not None and change not in edits:
            edits.append(change)
    kept: list[debugging.Plant] = []
    by_mistake: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="attnprep-plants-") as tmp:
        folder = Path(tmp)
        for where, old, new in edits:
            lines = list(base_lines)
            for n, text in zip(where, new):
                lines[n - 1] = text
            names = _graded_names(folder, exercise_id, lines)
            if names and len(names) == 1 and names[0] in listed and by_mistake.get(names[0], 0) < per_mistake:
                by_mistake[names[0]] = by_mistake.get(names[0], 0) + 1
                kept.append(debugging.Plant(names[0], where, old, new))
        log(f"{exercise_id}: {len(edits)} one-line edits, {len(kept)} plants, {len(by_mistake)} mistakes")
        candidates = [(a, b) for a, b in itertools.combinations(range(len(kept)), 2)
                      if kept[a].mistake != kept[b].mistake and not set(kept[a].lines) & set(kept[b].lines)]
        random.Random(exercise_id).shuffle(candidates)
        pairs = []
        for a, b in candidates[: max_pairs * 4]:
            if len(pairs) >= max_pairs:
                break
            lines = list(base_lines)
            for plant in (kept[a], kept[b]):
                for n, text in zip(plant.lines, plant.new):
                    lines[n - 1] = text
            names = _graded_names(folder, exercise_id, lines)
            if names is not None and sorted(names) == sorted((kept[a].mistake, kept[b].mistake)):
                pairs.append((a, b))
        log(f"{exercise_id}: {len(pairs)} pairs of {min(len(candidates), max_pairs * 4)} tried")
    return {"plants": kept, "pairs": pairs}


def _toml_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write(exercise_id: str, found: dict) -> Path:
    exercise = exercises.get(exercise_id)
    out = ["# Generated by `python benchmarks/plants.py --exercise " + exercise_id + "`: one-line edits of the",
           "# canonical reference (attnprep.debugging.canonical) that the grader names, for `attnprep debug`.",
           "# line(s): 1-based in the canonical reference; pairs: indices of two plants named together.", ""]
    out.append("pairs = [" + ", ".join(f"[{a}, {b}]" for a, b in found["pairs"]) + "]")
    for p in found["plants"]:
        out += ["", "[[plant]]", f"mistake = {_toml_string(p.mistake)}"]
        if len(p.lines) == 1:
            out += [f"line = {p.line}", f"old = {_toml_string(p.old[0])}", f"new = {_toml_string(p.new[0])}"]
        else:
            out += ["lines = [" + ", ".join(map(str, p.lines)) + "]",
                    "old = [" + ", ".join(map(_toml_string, p.old)) + "]",
                    "new = [" + ", ".join(map(_toml_string, p.new)) + "]"]
    path = debugging.plants_path(exercise)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", action="append", help="exercise id (repeatable; default: all)")
    parser.add_argument("--per-mistake", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=12)
    args = parser.parse_args(argv)
    ids = args.exercise or list(exercises.registry())
    for exercise_id in ids:
        found = generate(exercise_id, args.per_mistake, args.pairs)
        print(write(exercise_id, found), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Every corpus attempt's whole Result, for telling whether a grader change changed any grade.

    python benchmarks/corpus_results.py OUT.pickle [--n N]     # grade, write, print the CPU
    python benchmarks/corpus_results.py --compare A.pickle B.pickle

Grades every file of tests/corpus/ (the misses/ folders included, hostile/ left out) in one process,
outputs kept as the test suite keeps them, seed 0, timeout 30 s, and writes each Result as a tree of
its fields (``duration_s`` left out; the checkout's own path written ``<ROOT>``, so two checkouts
compare) to OUT. Run it with each tree's interpreter (its editable install) before and after a
change, then ``--compare``: the files whose results differ, and the fields that do. The CPU printed
is the process's and its reaped children's (user + system).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import os
import pickle
import resource
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def canon(x, root: str):
    """``x`` as plain nested tuples: dataclasses by their fields, the text keys and parameters of a
    grader string (``Words``) with its text, floats by their repr."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple((f.name, canon(getattr(x, f.name), root))
                                        for f in dataclasses.fields(x) if f.name != "duration_s"))
    if isinstance(x, enum.Enum):
        return ("enum", type(x).__name__, x.value)
    if isinstance(x, str):
        extra = tuple(sorted((k, canon(v, root)) for k, v in vars(x).items())) if hasattr(x, "__dict__") else ()
        return ("str", type(x).__name__, x.replace(root, "<ROOT>"), extra)
    if isinstance(x, dict):
        return ("dict", tuple((canon(k, root), canon(v, root)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(canon(v, root) for v in x))
    if isinstance(x, float):
        return ("float", repr(x))
    if x is None or isinstance(x, (int, bool)):
        return x
    return ("other", type(x).__name__, repr(x))


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def dump(out: Path, n: int = 0) -> None:
    os.environ.setdefault("ATTNPREP_HOME", str(out.with_suffix(".home")))
    import torch

    torch.set_num_threads(1)
    from attnprep.grader import engine, outputs

    outputs.keep()
    root = str(CORPUS.parent.parent)
    files = [f for f in sorted(CORPUS.rglob("*.py")) if "hostile" not in f.relative_to(CORPUS).parts]
    files = files[:n] if n else files
    results, start, wall = {}, _cpu(), time.perf_counter()
    for f in files:
        exercise = engine.exercise_of(f, f.read_bytes()[:2000].decode("utf-8", errors="replace"), None)
        results[str(f.relative_to(CORPUS))] = canon(engine.grade(f, exercise, seed=0, device="cpu", timeout=30.0), root)
    out.write_bytes(pickle.dumps(results))
    print(f"{len(files)} files, {_cpu() - start:.1f} s of CPU, {time.perf_counter() - wall:.0f} s of wall time")


def compare(a: Path, b: Path) -> int:
    x, y = pickle.loads(a.read_bytes()), pickle.loads(b.read_bytes())
    if x.keys() != y.keys():
        print(f"not the same files: {len(x.keys() - y.keys())} only in {a}, {len(y.keys() - x.keys())} only in {b}")
    differ = [k for k in x if k in y and x[k] != y[k]]
    for k in differ:
        fx, fy = dict(x[k][1]), dict(y[k][1])
        print(f"{k}: {[f for f in fx if fx[f] != fy.get(f)]}")
    print(f"{len(x)} and {len(y)} files, {len(differ)} differ")
    return 1 if differ or x.keys() != y.keys() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="where to write the results")
    parser.add_argument("--n", type=int, default=0, help="only the first N files")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give OUT or --compare A B")
    dump(args.out, args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())

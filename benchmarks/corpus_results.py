"""Every corpus attempt's whole Result, for telling whether a grader change changed any grade.

    python benchmarks/corpus_results.py OUT.pickle [--n N]     # grade, write, print the CPU
    python benchmarks/corpus_results.py OUT.pickle --sample 300 --shuffle 1   # a sample, in a random order
    python benchmarks/corpus_results.py OUT.pickle --sample 300 --fresh       # each file in a fresh process
    python benchmarks/corpus_results.py --compare A.pickle B.pickle

Grades every file of tests/corpus/ (the misses/ folders included, hostile/ left out) in one process,
outputs kept as the test suite keeps them, seed 0, timeout 30 s, and writes each Result as a tree of
its fields (``duration_s`` left out; the checkout's own path written ``<ROOT>``, so two checkouts
compare) to OUT. Run it with each tree's interpreter (its editable install) before and after a
change, then ``--compare``: the files whose results differ, and the fields that do. The CPU printed
is the process's and its reaped children's (user + system).

A grade must not depend on what the process graded before it (issue 28). ``--sample N`` grades N
files spread over every exercise (the same N files for the same ``--sample-seed``); ``--shuffle
SEED`` grades them in a random order; ``--fresh`` grades each file in a process of its own, forked
from one that imported and warmed the grader and graded nothing (what a fresh ``attnprep check``
process has done before its grade, at a fraction of an interpreter's start). Compare a fresh dump
with an in-order one, shuffled ones, one run with another ``PYTHONHASHSEED``, or one run under load.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import os
import pickle
import random
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


def corpus_files(n: int = 0, sample: int = 0, sample_seed: int = 0, only: tuple[str, ...] = (),
                 listed: Path | None = None) -> list[Path]:
    """The corpus files graded (sorted): all (of the exercises ``only``), the first ``n``, or
    ``sample`` of them drawn over every exercise in turn (each exercise's files in an order drawn
    from ``sample_seed``)."""
    files = [f for f in sorted(CORPUS.rglob("*.py")) if "hostile" not in f.relative_to(CORPUS).parts
             and (not only or f.relative_to(CORPUS).parts[0] in only)]
    if listed is not None:  # one path a line, relative to tests/corpus
        wanted = {line.strip() for line in listed.read_text(encoding="utf-8").splitlines() if line.strip()}
        files = [f for f in files if str(f.relative_to(CORPUS)) in wanted]
    if sample:
        by_exercise: dict[str, list[Path]] = {}
        for f in files:
            by_exercise.setdefault(f.relative_to(CORPUS).parts[0], []).append(f)
        rng = random.Random(sample_seed)
        for group in by_exercise.values():
            rng.shuffle(group)
        picked: list[Path] = []
        while len(picked) < min(sample, len(files)):
            for group in by_exercise.values():
                if group and len(picked) < sample:
                    picked.append(group.pop())
        files = sorted(picked)
    return files[:n] if n else files


def _grade(f: Path, root: str, timeout: float):
    from attnprep.grader import engine

    exercise = engine.exercise_of(f, f.read_bytes()[:2000].decode("utf-8", errors="replace"), None)
    return canon(engine.grade(f, exercise, seed=0, device="cpu", timeout=timeout), root)


def _grade_fresh(f: Path, root: str, timeout: float):
    """``_grade`` in a process forked from this one (which has graded nothing), its result sent back."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fresh process
        os.close(read)
        code = 0
        try:
            data = pickle.dumps(("ok", _grade(f, root, timeout)))
        except BaseException as exc:  # noqa: BLE001 - said in the dump, as a difference
            data, code = pickle.dumps(("raised", repr(exc))), 1
        with os.fdopen(write, "wb") as w:
            w.write(data)
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as r:
        data = r.read()
    os.waitpid(pid, 0)
    status, value = pickle.loads(data) if data else ("raised", "no reply")
    return value if status == "ok" else ("raised", value)


def dump(out: Path, n: int = 0, *, sample: int = 0, sample_seed: int = 0, shuffle: int | None = None,
         fresh: bool = False, timeout: float = 30.0, only: tuple[str, ...] = (),
         listed: Path | None = None) -> None:
    os.environ.setdefault("ATTNPREP_HOME", str(out.with_suffix(".home")))
    import torch

    torch.set_num_threads(1)
    from attnprep.grader import engine, outputs

    outputs.keep()
    engine.warm_up()
    # every grader module imported now, not by the first grade that needs it: a fresh process forked
    # later runs the code this one started with, whatever is edited meanwhile
    for module in sorted(p.stem for p in (CORPUS.parent.parent / "grader").glob("*.py")):
        importlib.import_module(f"attnprep.grader.{module}")
    root = str(CORPUS.parent.parent)
    files = corpus_files(n, sample, sample_seed, tuple(only), listed)
    order = list(files)
    if shuffle is not None:
        random.Random(shuffle).shuffle(order)
    grade = _grade_fresh if fresh else _grade
    results, start, wall = {}, _cpu(), time.perf_counter()
    for f in order:
        results[str(f.relative_to(CORPUS))] = grade(f, root, timeout)
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
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="N files spread over every exercise")
    parser.add_argument("--sample-seed", type=int, default=0, help="which N files --sample draws")
    parser.add_argument("--shuffle", type=int, default=None, metavar="SEED", help="grade in an order drawn from SEED")
    parser.add_argument("--fresh", action="store_true", help="grade each file in a process of its own (forked "
                        "from one that has graded nothing)")
    parser.add_argument("--timeout", type=float, default=30.0, help="each grade's time limit (s)")
    parser.add_argument("--exercise", action="append", default=[], help="only this exercise's files (again for more)")
    parser.add_argument("--files", type=Path, default=None, help="only the files listed (one a line, relative to tests/corpus)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give OUT or --compare A B")
    dump(args.out, args.n, sample=args.sample, sample_seed=args.sample_seed, shuffle=args.shuffle, fresh=args.fresh,
         timeout=args.timeout, only=tuple(args.exercise), listed=args.files)
    return 0


if __name__ == "__main__":
    sys.exit(main())

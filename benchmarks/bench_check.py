"""What one `attnprep check` costs, relative to a bare `python -c "import torch"` (≤ 1.5×).

Every figure is a ratio to a baseline measured in the same run: the baseline and the subject run
alternately (baseline, subject, baseline, subject …) in fresh interpreters, so a background load
hits both alike, and the medians are compared. Each command runs once untimed first (file cache,
bytecode) and that run's ``--json`` is checked, so a fast crash can never pass for a fast check.

Rows (``measure_*`` return one plain dict each; ``benchmarks/run.py`` prints them as a table):

- ``check``: a correct MHA (``solutions/mha.py`` copied as ``mha.py``) vs bare ``import torch``;
- ``check-fail``: a failing GQA attempt (``tests/corpus/gqa/gqa_heads_tiled.py`` as ``gqa.py``):
  the same plus variant search and diagnosis;
- ``check-all``: the six reference solutions as ``<id>.py`` in one folder, one ``attnprep check``;
- ``memory``: peak RSS of one correct check (the attnprep process and its forked grading child,
  read with ``getrusage``) vs the peak RSS of bare ``import torch``.

    python benchmarks/bench_check.py [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
def exercise_ids() -> list[str]:
    """Every registered exercise, in teaching order (the registry is torch-free)."""
    from attnprep import exercises

    return list(exercises.registry())
CHECK_TARGET = 1.5  # one check ≤ 1.5× bare `import torch`
# Each command runs once untimed before its timed runs (the file cache, bytecode); run.py's
# --no-warm-up turns that off for the test suite's smoke runs, which check a row's shape, not its
# figures: the check rows' `--json` run still checks the verdicts, and is then their first timed run
# (not run again without --json: with --repeat 1, one `attnprep check` per row, not two).
WARM_UP = True
TORCH = [sys.executable, "-c", "import torch"]
# run.py's --one-baseline (the test suite's smoke runs, like --no-warm-up): the bare `import torch`
# runs are measured for the first row that compares with them and reused by the rows after it, not
# run again beside each row's own; None: each row measures its own, interleaved with its subject
SHARED_TORCH: list[Run] | None = None

# Runs attnprep's entry point in this very interpreter (what the console script does), then writes
# the process's own peak RSS and its reaped children's (the forked grading child) to a file: at
# exit, from an atexit handler (a command that loaded torch ends with os._exit after running them).
_RUSAGE_WRAPPER = """\
import atexit, json, os, resource, sys
sys.argv[0] = "attnprep"

def report():
    with open(os.environ["ATTNPREP_BENCH_RUSAGE"], "w") as f:
        json.dump({"self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}, f)

atexit.register(report)
from attnprep.cli import main
main()
"""


def attnprep_command() -> list[str]:
    """The installed console script next to this interpreter (no pyenv shim in between), else
    ``python -m attnprep``."""
    script = Path(sys.executable).parent / "attnprep"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "attnprep"]


def _mib(maxrss: int) -> float:
    """ru_maxrss in MiB (Linux reports KiB, macOS bytes)."""
    return maxrss / (1 << 20) if sys.platform == "darwin" else maxrss / 1024


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mib: float  # max RSS over the process and every descendant it reaped (wait4)
    code: int


def run_once(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None, ok: tuple[int, ...] = (0,),
             stdout: list[str] | None = None) -> Run:
    """Wall time and peak RSS of one command in a fresh process; stdout is discarded, or appended
    to ``stdout`` (a list) when one is given."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL if stdout is None else out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(cmd)} exited with {code} (expected {ok}): {tail}")
        if stdout is not None:
            out.seek(0)
            stdout.append(out.read().decode())
    return Run(seconds, _mib(usage.ru_maxrss), code)


def torch_baseline() -> Callable[[], Run]:
    """The baseline of a row that compares with bare ``import torch``: a function that runs it once
    more at each call; with a shared baseline (:data:`SHARED_TORCH`), its k-th call gives the
    shared k-th run, measured by the first row that asked for it."""
    if SHARED_TORCH is None:
        return lambda: run_once(TORCH)
    calls = iter(range(1 << 30))

    def shared() -> Run:
        k = next(calls)
        if k == len(SHARED_TORCH):
            SHARED_TORCH.append(run_once(TORCH))
        return SHARED_TORCH[k]

    return shared


def interleaved(baseline: Callable[[], Run], subject: Callable[[], Run], repeat: int) -> tuple[list[Run], list[Run]]:
    """baseline, subject, baseline, subject … ``repeat`` times each."""
    base: list[Run] = []
    subj: list[Run] = []
    for _ in range(repeat):
        base.append(baseline())
        subj.append(subject())
    return base, subj


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def timing_row(name: str, what: str, baseline_name: str, base: list[Run], subj: list[Run], target: float | None, **extra) -> dict:
    """One table row from interleaved runs: medians, their ratio, the target and every sample."""
    b = median([r.seconds for r in base])
    s = median([r.seconds for r in subj])
    ratio = round(s / b, 3)  # judged as reported: 1.6004 shows as 1.6 and is within a 1.6 target
    return {
        "name": name,
        "what": what,
        "unit": "s",
        "subject_median": round(s, 3),
        "baseline": baseline_name,
        "baseline_median": round(b, 3),
        "ratio": ratio,
        "target": target,
        "target_kind": "ratio" if target is not None else "info",
        "ok": (ratio <= target) if target is not None else None,
        "runs": len(subj),
        "samples": {"subject": [round(r.seconds, 3) for r in subj], "baseline": [round(r.seconds, 3) for r in base]},
        "peak_rss_mib": {"subject": round(median([r.peak_mib for r in subj]), 1),
                         "baseline": round(median([r.peak_mib for r in base]), 1)},
        **extra,
    }


def compile_bytecode() -> list[str]:
    """Compile attnprep's modules to bytecode, as ``pip install`` does for a package (typer's and
    rich's, the baselines', are compiled). Without it an editable install run with
    PYTHONDONTWRITEBYTECODE=1 (this machine sets it) compiles every attnprep module from source in
    every process, which no installed copy does. Returns the folders compiled."""
    import compileall
    import importlib.util

    folders = []
    for package in ("attnprep", "attnprep.exercises", "attnprep.solutions", "attnprep.grader"):
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            if folder not in folders:
                compileall.compile_dir(folder, quiet=1, workers=1)
                folders.append(folder)
    return folders


class Workspace:
    """Temporary folders: a user data home and one folder of attempts per scenario.

    ``env`` points attnprep at an empty data folder with ATTNPREP_HOME; ``user_env`` does not set
    it, as most users don't, so attnprep finds its data folder the platform's way (platformdirs)
    under a temporary HOME and XDG_DATA_HOME.
    """

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="attnprep-bench-")
        self.root = Path(self._tmp.name)
        home = self.root / "home"
        home.mkdir()
        self.env = {**os.environ, "ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "100"}
        user_home = self.root / "user"
        user_home.mkdir()
        self.user_env = {k: v for k, v in self.env.items() if k != "ATTNPREP_HOME"}
        self.user_env.update(HOME=str(user_home), XDG_DATA_HOME=str(user_home / ".local" / "share"))
        compile_bytecode()

    def folder(self, name: str, files: dict[str, Path]) -> Path:
        """A folder holding ``files`` (name in the folder → source file)."""
        where = self.root / name
        where.mkdir()
        for target, source in files.items():
            shutil.copyfile(source, where / target)
        return where

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _verdicts(cmd: list[str], cwd: Path, env: dict) -> tuple[list[dict], Run]:
    """Run ``check --json`` once and return exercise, verdict and diagnosis ids per file, and the
    run's time (counted as the first timed run only by the smoke runs: :data:`WARM_UP` off)."""
    out: list[str] = []
    try:
        run = run_once([*cmd, "--json"], cwd=cwd, env=env, ok=(0, 1), stdout=out)
    except RuntimeError as e:
        raise RuntimeError(f"attnprep check failed to run: {e}") from None
    doc = json.loads(out[0])
    graded = [{"exercise": r["exercise"], "verdict": r["verdict"], "diagnoses": [d["id"] for d in r.get("diagnoses", [])]}
              for r in doc["results"]]
    return graded, run


def _check_row(ws: Workspace, name: str, what: str, files: dict[str, Path], args: list[str], expect_pass: bool,
               target: float | None, repeat: int) -> dict:
    folder = ws.folder(name, files)
    cmd = [*attnprep_command(), "check", *args]
    graded, first = _verdicts(cmd, folder, ws.env)  # also the untimed warm-up
    if len(graded) != len(files) or any((g["verdict"] == "passed") != expect_pass for g in graded):
        raise RuntimeError(f"{name}: unexpected verdicts {graded}")
    code = 0 if expect_pass else 1
    if first.code != code:
        raise RuntimeError(f"{name}: `{' '.join(cmd)} --json` exited with {first.code}, expected {code}")
    subject = lambda: run_once(cmd, cwd=folder, env=ws.env, ok=(code,))  # noqa: E731
    if WARM_UP:
        run_once(TORCH)  # warm-up of the baseline
    else:  # the smoke runs: the `--json` run (its verdicts checked above) is the first timed run, not run again
        runs = iter([first])
        subject = lambda: next(runs, None) or run_once(cmd, cwd=folder, env=ws.env, ok=(code,))  # noqa: E731
    base, subj = interleaved(torch_baseline(), subject, repeat)
    return timing_row(name, what, "python -c 'import torch'", base, subj, target,
                      command=" ".join(["attnprep", "check", *args]), graded=graded)


def measure_check(ws: Workspace, repeat: int) -> dict:
    return _check_row(ws, "check", "one `attnprep check` of a correct MHA (solutions/mha.py as mha.py)",
                      {"mha.py": ROOT / "solutions" / "mha.py"}, ["mha"], True, CHECK_TARGET, repeat)


def measure_check_fail(ws: Workspace, repeat: int) -> dict:
    return _check_row(ws, "check-fail", "one `attnprep check` of a failing GQA (tests/corpus/gqa/gqa_heads_tiled.py as gqa.py): diagnosis included",
                      {"gqa.py": ROOT / "tests" / "corpus" / "gqa" / "gqa_heads_tiled.py"}, ["gqa"], False, CHECK_TARGET, repeat)


def measure_check_all(ws: Workspace, repeat: int) -> dict:
    files = {f"{e}.py": ROOT / "solutions" / f"{e}.py" for e in exercise_ids()}
    return _check_row(ws, "check-all", "one `attnprep check` of every reference solution as <id>.py in one folder",
                      files, [], True, None, repeat)


def measure_check_one(ws: Workspace, repeat: int, exercise_id: str) -> dict:
    """One `attnprep check` of an exercise's reference solution, copied as <id>.py."""
    return _check_row(ws, f"check-{exercise_id}", f"one `attnprep check` of a correct {exercise_id} (its reference as {exercise_id}.py)",
                      {f"{exercise_id}.py": ROOT / "solutions" / f"{exercise_id}.py"}, [exercise_id], True, CHECK_TARGET, repeat)


def failing_attempt(exercise_id: str) -> Path:
    """The exercise's attempt for its `fail-<id>` row: the one its corpus's ``examples.toml`` names
    as ``benchmark`` (of the failing attempts, the one whose grading took longest in process when
    the row was set up: the divergence finder traces it in a second child and compares some
    hundreds of steps with the reference's), else its first failing attempt that names a mistake,
    by file name (tests/per_exercise.py reads the same file the same way)."""
    folder = ROOT / "tests" / "corpus" / exercise_id
    examples = folder / "examples.toml"
    if examples.is_file():
        chosen = tomllib.loads(examples.read_text(encoding="utf-8")).get("benchmark")
        if chosen:
            return folder / chosen
    for path in sorted(folder.glob("*.py")):
        head = path.read_text(encoding="utf-8", errors="replace").splitlines()[:3]
        expect = next((l.split(":", 1)[1].strip() for l in head if l.startswith("# expect:")), "passed")
        if expect != "passed" and any(l.startswith("# diagnosis:") for l in head):
            return path
    raise LookupError(f"no failing corpus attempt that names a mistake in {folder}")


def measure_fail_one(ws: Workspace, repeat: int, exercise_id: str) -> dict:
    """One `attnprep check` of a failing attempt of the exercise (:func:`failing_attempt`), copied as
    <id>.py: the variant search, the divergence finder's trace child and the comparison of the
    trails included."""
    source = failing_attempt(exercise_id)
    return _check_row(ws, f"fail-{exercise_id}", f"one `attnprep check` of a failing {exercise_id} "
                      f"(tests/corpus/{exercise_id}/{source.name} as {exercise_id}.py)",
                      {f"{exercise_id}.py": source}, [exercise_id], False, CHECK_TARGET, repeat)


def measure_memory(ws: Workspace, repeat: int) -> dict:
    """Peak RSS of one correct MHA check: the attnprep process, its grading child, and the larger
    of the two (the process tree's peak) against bare ``import torch``'s peak RSS."""
    folder = ws.folder("memory", {"mha.py": ROOT / "solutions" / "mha.py"})
    out = ws.root / "rusage.json"
    env = {**ws.env, "ATTNPREP_BENCH_RUSAGE": str(out)}
    cmd = [sys.executable, "-c", _RUSAGE_WRAPPER, "check", "mha"]
    parts: list[dict] = []

    def subject() -> Run:
        run = run_once(cmd, cwd=folder, env=env)
        parts.append(json.loads(out.read_text()))
        return run

    if WARM_UP:
        subject()  # warm-up
        parts.clear()
    base, subj = interleaved(torch_baseline(), subject, repeat)
    b = median([r.peak_mib for r in base])
    s = median([r.peak_mib for r in subj])
    return {
        "name": "memory",
        "what": "peak RSS of one correct MHA check (max of the attnprep process and its grading child) vs bare `import torch`",
        "unit": "MiB",
        "subject_median": round(s, 1),
        "baseline": "python -c 'import torch'",
        "baseline_median": round(b, 1),
        "ratio": round(s / b, 3),
        "target": None,
        "target_kind": "info",
        "ok": None,
        "runs": len(subj),
        "samples": {"subject": [round(r.peak_mib, 1) for r in subj], "baseline": [round(r.peak_mib, 1) for r in base]},
        "attnprep_process_mib": round(median([_mib(p["self"]) for p in parts]), 1),
        "grading_child_mib": round(median([_mib(p["children"]) for p in parts]), 1),
    }


MEASURES: dict[str, Callable[[Workspace, int], dict]] = {
    "check": measure_check,
    "check-fail": measure_check_fail,
    "check-all": measure_check_all,
    "memory": measure_memory,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    with Workspace() as ws:
        rows = [measure(ws, args.repeat) for measure in MEASURES.values()]
    if args.json:
        print(json.dumps({"rows": rows}, indent=2, ensure_ascii=False))
    else:
        for row in rows:
            target = f"≤ {row['target']}×" if row["target"] is not None else "info"
            print(f"{row['name']:11s} {row['subject_median']:8.3f} {row['unit']:3s} vs {row['baseline_median']:8.3f}  "
                  f"{row['ratio']:.2f}×  ({target})")
    return 0 if all(row["ok"] is not False for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

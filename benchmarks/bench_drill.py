"""Save → verdict latency of `attnprep drill` (target: median ≤ 0.5 s for MHA).

Starts ``python -m attnprep drill mha --dir <tmp>`` in a subprocess with a non-tty stdout (so it
prints plain progress lines), waits for its "go:" line, then writes an attempt into the drill file
N times. Each write is timestamped just before it; the matching ``saved →`` progress line is
timestamped when it arrives on the pipe. Latency = line time − write time: watcher debounce +
the forked, isolated grade + rendering, i.e. what the user waits for after saving.

Wrong attempts (missing scale: the full check-and-diagnose path) are written N times; then one
correct attempt ends the drill, which is timed too. ``--pass-runs K`` times K more passing saves,
each in a fresh drill.

    python benchmarks/bench_drill.py            # human-readable
    python benchmarks/bench_drill.py --json     # one JSON document
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "mha"


def attempts() -> tuple[str, str]:
    """(wrong, correct) MHA attempts from the test corpus, else from the reference solution."""
    correct_file = CORPUS / "ok_textbook.py"
    if correct_file.exists():
        correct = correct_file.read_text(encoding="utf-8")
    else:
        lines = (ROOT / "solutions" / "mha.py").read_text(encoding="utf-8").splitlines(keepends=True)
        correct = "".join(["# attnprep: mha\n", *lines[1:]])
    wrong_file = CORPUS / "missing_scale.py"
    wrong = wrong_file.read_text(encoding="utf-8") if wrong_file.exists() else correct + "\nsyntax error(\n"
    return wrong, correct


class Drill:
    """A drill subprocess whose stdout lines arrive, timestamped, on a queue."""

    def __init__(self, workdir: Path, home: Path, seconds: float) -> None:
        env = {**os.environ, "ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attnprep", "drill", "mha", "--dir", str(workdir), "--seconds", str(seconds)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=env, cwd=workdir,
        )
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.workdir = workdir
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), line))
        self.lines.put((time.perf_counter(), ""))

    def wait_for(self, marker: str, timeout: float = 120.0) -> tuple[float, str]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {marker!r} line within {timeout} s")
            at, line = self.lines.get(timeout=left)
            if not line:
                raise RuntimeError(f"the drill ended before a {marker!r} line: {self.proc.stderr.read()}")
            if marker in line:
                return at, line

    def start(self) -> Path:
        _, wrote = self.wait_for("wrote ")
        path = self.workdir / wrote.split("wrote ", 1)[1].split()[0]
        self.wait_for("go:")
        return path

    def save(self, path: Path, text: str) -> tuple[float, str]:
        time.sleep(0.15)  # a human does not save twice within the watcher's step
        written = time.perf_counter()
        path.write_text(text, encoding="utf-8")
        at, line = self.wait_for("saved →")
        return at - written, line.strip()

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=60)
        finally:
            self.proc.kill()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median_s": round(statistics.median(values), 3),
        "p90_s": round(percentile(values, 0.9), 3),
        "min_s": round(min(values), 3),
        "max_s": round(max(values), 3),
    }


def direct_grades(n: int) -> dict:
    """The same attempts graded in this process (torch warm): the grader's share of the latency."""
    from attnprep.grader import grade, warm_up

    warm_up()
    wrong, correct = attempts()
    out: dict[str, list[float]] = {"wrong": [], "passing": []}
    with tempfile.TemporaryDirectory(prefix="attnprep-bench-") as tmp:
        for name, text in (("wrong", wrong), ("passing", correct)):
            path = Path(tmp) / f"{name}.py"
            path.write_text(text, encoding="utf-8")
            for _ in range(n):
                t = time.perf_counter()
                grade(path, "mha")
                out[name].append(time.perf_counter() - t)
    return {name: summary(values) for name, values in out.items()}


def run(n: int, pass_runs: int) -> dict:
    wrong, correct = attempts()
    wrong_s: list[float] = []
    pass_s: list[float] = []
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="attnprep-bench-") as tmp:
        tmp_path = Path(tmp)
        for drill_no in range(1 + pass_runs):
            workdir = tmp_path / f"drill{drill_no}"
            workdir.mkdir()
            drill = Drill(workdir, tmp_path / "home", seconds=3600)
            try:
                path = drill.start()
                for _ in range(n if drill_no == 0 else 0):
                    latency, line = drill.save(path, wrong)
                    wrong_s.append(latency)
                    lines.append(line)
                latency, line = drill.save(path, correct)
                pass_s.append(latency)
                lines.append(line)
                code = drill.close()
                if code != 0:
                    raise RuntimeError(f"the drill ended with exit code {code} after a correct attempt")
            finally:
                drill.proc.kill()
    everything = wrong_s + pass_s
    return {
        "benchmark": "drill save → verdict line",
        "exercise": "mha",
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "target_median_s": 0.5,
        "wrong": summary(wrong_s),
        "passing": summary(pass_s),
        "all": summary(everything),
        "samples_s": {"wrong": [round(x, 3) for x in wrong_s], "passing": [round(x, 3) for x in pass_s]},
        "example_lines": lines[:1] + lines[-1:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="wrong saves timed in the first drill (default 20)")
    parser.add_argument("--pass-runs", type=int, default=2, help="extra drills, each timing one passing save (default 2)")
    parser.add_argument("--direct", type=int, default=5, help="in-process grade() calls per attempt, for the grader's share (default 5; 0: skip)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    report = run(args.n, args.pass_runs)
    if args.direct:
        report["grade_in_process"] = direct_grades(args.direct)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    print(f"save → verdict, mha, {report['cpus']} CPUs, load {report['load_avg_1m']}")
    for name in ("wrong", "passing", "all"):
        s = report[name]
        if s["n"]:
            print(f"  {name:8s} n={s['n']:3d}  median {s['median_s']:.3f} s  p90 {s['p90_s']:.3f} s  "
                  f"min {s['min_s']:.3f} s  max {s['max_s']:.3f} s")
    if "grade_in_process" in report:
        g = report["grade_in_process"]
        print(f"  of which grade() alone (in process, torch warm): wrong median {g['wrong']['median_s']:.3f} s, "
              f"passing median {g['passing']['median_s']:.3f} s")
    verdict = "meets" if report["all"]["median_s"] <= report["target_median_s"] else "misses"
    print(f"  target: median ≤ {report['target_median_s']} s → {verdict}")
    for line in report["example_lines"]:
        print(f"  e.g. {line}")


if __name__ == "__main__":
    main()

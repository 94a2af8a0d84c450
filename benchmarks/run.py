"""attnprep's benchmarks in one command: a table of each figure against its baseline and target.

Every timing is a ratio to a baseline measured in the same run, the two commands alternating
(baseline, subject, baseline, subject …) in fresh interpreters, medians of ``--repeat`` runs; the
drill row is an absolute latency. See benchmarks/README.md for what each row measures.

    python benchmarks/run.py [--repeat 5] [--json] [--only NAME[,NAME]] [--no-warm-up] [--one-baseline]

Rows: list, list-practised, check, check-fail, check-all, drill, memory, compare, teardown, and check-<id>
(a correct attempt) and fail-<id> (a failing one) for every exercise. Exit code 1 when a row misses its target.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_check  # noqa: E402
import bench_drill  # noqa: E402
from bench_check import Workspace, attnprep_command, interleaved, run_once, timing_row  # noqa: E402

LIST_TARGET = 1.6
DRILL_TARGET_S = 0.5
COMPARE_PRESET = "deepseek-v3"


def _list_row(name: str, what: str, folder, env: dict, repeat: int) -> dict:
    """`attnprep list` in ``folder`` vs bare `import typer, rich`, both in ``env``; one untimed run
    of each first."""
    cmd = [*attnprep_command(), "list"]
    baseline = [sys.executable, "-c", "import typer, rich"]
    if bench_check.WARM_UP:
        run_once(cmd, cwd=folder, env=env)  # warm-ups, not counted
        run_once(baseline, cwd=folder, env=env)
    base, subj = interleaved(lambda: run_once(baseline, cwd=folder, env=env), lambda: run_once(cmd, cwd=folder, env=env), repeat)
    return timing_row(name, what, "python -c 'import typer, rich'", base, subj, LIST_TARGET, command="attnprep list")


def measure_list(ws: Workspace, repeat: int) -> dict:
    """Cold `attnprep list` (fresh interpreter, empty folder, no history, no ATTNPREP_HOME: the data
    folder found as a user's is) vs bare `import typer, rich`, both in the same environment."""
    return _list_row("list", "cold `attnprep list` in an empty folder with no history", ws.folder("list", {}), ws.user_env, repeat)


def measure_list_practised(ws: Workspace, repeat: int) -> dict:
    """`attnprep list` where someone has practised: a blank mha.py, a failing gqa.py that was checked
    once (so there is a history to read), the data folder found as a user's is. The set-up check
    and the untimed first list (which caches the rendered stubs) are not counted."""
    folder = ws.folder("list-practised", {"gqa.py": bench_check.ROOT / "tests" / "corpus" / "gqa" / "gqa_heads_tiled.py"})
    run_once([*attnprep_command(), "new", "mha"], cwd=folder, env=ws.user_env)
    run_once([*attnprep_command(), "check", "gqa"], cwd=folder, env=ws.user_env, ok=(1,))
    return _list_row("list-practised", "`attnprep list` with a blank and a checked attempt and a history",
                     folder, ws.user_env, repeat)


def measure_drill(ws: Workspace, repeat: int) -> dict:
    """Save → verdict latency of a real drill, by bench_drill.run: ``repeat`` wrong saves and one
    passing save that ends the drill."""
    report = bench_drill.run(repeat, 0)
    every = report["all"]
    return {
        "name": "drill",
        "what": "drill save → verdict line latency (MHA; wrong saves + the passing save)",
        "unit": "s",
        "subject_median": every["median_s"],
        "p90": every["p90_s"],
        "baseline": None,
        "baseline_median": None,
        "ratio": None,
        "target": DRILL_TARGET_S,
        "target_kind": "seconds",
        "ok": every["median_s"] <= DRILL_TARGET_S,
        "runs": every["n"],
        "samples": report["samples_s"],
        "wrong": report["wrong"],
        "passing": report["passing"],
    }


def measure_compare(ws: Workspace, repeat: int) -> dict:
    """`attnprep compare --preset deepseek-v3 --json` vs bare `import torch`, by bench_compare.py
    (its ``measure`` in this process with --one-baseline: the shared bare `import torch` runs)."""
    if bench_check.SHARED_TORCH is not None:
        import bench_compare

        shared = bench_check.torch_baseline()
        report = bench_compare.measure(repeat, COMPARE_PRESET, bench_check.WARM_UP, baseline=lambda: shared().seconds)
    else:
        proc = subprocess.run([sys.executable, str(HERE / "bench_compare.py"), "-n", str(repeat), "--preset", COMPARE_PRESET,
                               "--json", *([] if bench_check.WARM_UP else ["--no-warm-up"])],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode not in (0, 1):  # 1: over its budget, still a measurement
            raise RuntimeError(f"bench_compare.py failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        report = json.loads(proc.stdout)
    return {
        "name": "compare",
        "what": f"`attnprep compare --preset {COMPARE_PRESET} --json`",
        "unit": "s",
        "subject_median": report["median_s"]["compare"],
        "baseline": "python -c 'import torch'",
        "baseline_median": report["median_s"]["import_torch"],
        "ratio": report["ratio"],
        "target": report["budget"],
        "target_kind": "ratio",
        "ok": report["within_budget"],
        "runs": report["runs"],
        "samples": {"subject": report["runs_s"]["compare"], "baseline": report["runs_s"]["import_torch"]},
        "command": f"python -m attnprep compare --preset {COMPARE_PRESET} --json",
    }


def measure_teardown(ws: Workspace, repeat: int) -> dict:
    """What the interpreter's teardown costs once torch is loaded: `import torch` ended with
    os._exit (as a command of attnprep that loaded torch ends) vs a plain `import torch`, the
    baseline of the check rows, which pays it."""
    cmd = [sys.executable, "-c", "import torch, os; os._exit(0)"]
    if bench_check.WARM_UP:
        run_once(bench_check.TORCH)
        run_once(cmd)
    base, subj = interleaved(bench_check.torch_baseline(), lambda: run_once(cmd), repeat)
    return timing_row("teardown", "`import torch` ended with os._exit (no interpreter teardown)",
                      "python -c 'import torch'", base, subj, None, command="python -c 'import torch, os; os._exit(0)'")


MEASURES = {
    "list": measure_list,
    "list-practised": measure_list_practised,
    "check": bench_check.measure_check,
    "check-fail": bench_check.measure_check_fail,
    "check-all": bench_check.measure_check_all,
    "drill": measure_drill,
    "memory": bench_check.measure_memory,
    "compare": measure_compare,
    "teardown": measure_teardown,
}
# one row per exercise: `check-<id>`, each within the check target (the README lists them all)
for _id in bench_check.exercise_ids():
    MEASURES[f"check-{_id}"] = (lambda eid: lambda ws, repeat: bench_check.measure_check_one(ws, repeat, eid))(_id)
# … and one per exercise for a failing attempt: `fail-<id>`, within the same target
for _id in bench_check.exercise_ids():
    MEASURES[f"fail-{_id}"] = (lambda eid: lambda ws, repeat: bench_check.measure_fail_one(ws, repeat, eid))(_id)


def machine() -> dict:
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "not installed"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch_version,
        "platform": platform.platform(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "attnprep_command": " ".join(attnprep_command()),
        "commit": commit,
    }


def _fmt(value, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value:.1f} {unit}" if unit == "MiB" else f"{value:.3f} {unit}"


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table (readable in a terminal, pasteable into a README)."""
    head = ["name", "subject median", "baseline median", "ratio", "target", "ok?"]
    lines = [head]
    for row in rows:
        subject = _fmt(row["subject_median"], row["unit"])
        if row.get("p90") is not None:
            subject += f" (p90 {row['p90']:.3f} s)"
        if row["target_kind"] == "ratio":
            target = f"≤ {row['target']}×"
        elif row["target_kind"] == "seconds":
            target = f"median ≤ {row['target']} s"
        else:
            target = "info"
        ok = "—" if row["ok"] is None else ("yes" if row["ok"] else "NO")
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}×"
        lines.append([row["name"], subject, _fmt(row["baseline_median"], row["unit"]), ratio, target, ok])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths)) + " |" for line in lines]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command, interleaved with its baseline (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON document with every row")
    parser.add_argument("--only", action="append", metavar="NAME", help=f"run only these rows (repeatable or comma-separated): {', '.join(MEASURES)}")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="skip the untimed first run of each command, and time a check row's `--json` verdict run as its "
                             "first run (the tests' smoke runs: figures less fair)")
    parser.add_argument("--one-baseline", action="store_true",
                        help="measure bare `import torch` once for every row that compares with it (the tests' smoke runs: "
                             "figures less fair)")
    args = parser.parse_args(argv)
    bench_check.WARM_UP = not args.no_warm_up
    bench_check.SHARED_TORCH = [] if args.one_baseline else None
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    names = list(MEASURES)
    if args.only:
        names = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
        unknown = [n for n in names if n not in MEASURES]
        if unknown:
            parser.error(f"unknown row {', '.join(unknown)}; rows: {', '.join(MEASURES)}")

    info = machine()
    if not args.json:
        print(f"attnprep benchmarks · {info['date']} · commit {info['commit'] or '?'}")
        print(f"{info['cpus']} CPUs ({info['cpus_usable']} usable) · Python {info['python']} · torch {info['torch']} · "
              f"{info['platform']} · load {info['load_avg_1m']}")
        print(f"attnprep = {info['attnprep_command']} · --repeat {args.repeat}, interleaved with the baseline, medians\n", flush=True)
    rows = []
    with Workspace() as ws:
        for name in names:
            if not args.json:
                print(f"  measuring {name} …", file=sys.stderr, flush=True)
            rows.append(MEASURES[name](ws, args.repeat))
    info["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps({"version": 1, "machine": info, "repeat": args.repeat, "rows": rows}, indent=2, ensure_ascii=False))
    else:
        print(table(rows))
        print(f"\nload average at the end: {info['load_avg_1m_end']}")
    return 1 if any(row["ok"] is False for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How long `attnprep compare` takes on a big preset, relative to a bare `import torch`.

The budget (the compare budget): `python -m attnprep compare --preset deepseek-v3 --json` costs at most 2.5×
`python -c "import torch"` on the same machine. Both commands run N times, alternately (so a
background load hits both alike), in fresh interpreters; the medians and their ratio are printed.

    python benchmarks/bench_compare.py [-n 7] [--preset deepseek-v3] [--json]

Exit code 1 when the ratio is over the budget.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Callable

BUDGET = 2.5


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def measure(runs: int, preset: str, warm_up: bool, baseline: Callable[[], float] | None = None) -> dict:
    """``runs`` of compare and of bare ``import torch``, alternating, and their medians' ratio.
    ``baseline``: a function giving the k-th bare ``import torch`` time at its k-th call
    (benchmarks/run.py's shared baseline in the smoke runs), else run here beside each compare."""
    compare = [sys.executable, "-m", "attnprep", "compare", "--preset", preset, "--json"]
    if baseline is None:
        torch_cmd = [sys.executable, "-c", "import torch"]
        if warm_up:
            wall(torch_cmd)  # warm the file cache once, not counted
        baseline = lambda: wall(torch_cmd)  # noqa: E731
    times: dict[str, list[float]] = {"compare": [], "import_torch": []}
    for _ in range(runs):
        times["import_torch"].append(baseline())
        times["compare"].append(wall(compare))

    medians = {k: statistics.median(v) for k, v in times.items()}
    ratio = round(medians["compare"] / medians["import_torch"], 3)  # judged as reported
    return {"preset": preset, "runs": runs,
            "median_s": {k: round(v, 3) for k, v in medians.items()},
            "runs_s": {k: [round(t, 3) for t in v] for k, v in times.items()},
            "ratio": ratio, "budget": BUDGET, "within_budget": ratio <= BUDGET}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--preset", default="deepseek-v3")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--no-warm-up", action="store_true", help="skip the untimed first run (smoke runs)")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.preset, not args.no_warm_up)
    medians, ratio = result["median_s"], result["ratio"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"python -c 'import torch'           median {medians['import_torch']:.3f} s  ({args.runs} runs)")
        print(f"attnprep compare --preset {args.preset} --json  median {medians['compare']:.3f} s")
        print(f"ratio {ratio:.2f}× (budget {BUDGET}×): {'ok' if ratio <= BUDGET else 'OVER BUDGET'}")
    return 0 if ratio <= BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())

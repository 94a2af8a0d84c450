"""Grade every attempt of scratch/round4 once: verdict, names, divergence line vs header (JSON + table)."""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from corpus_names import header
from lines import bug_lines
from attnprep import exercises
from attnprep.grader import grade

root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "round4"
only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
rows = []
import os
start = os.environ.get("START", "")
for path in sorted(root.glob("*/*.py")):
    key = f"{path.parent.name}/{path.name}"
    if path.parent.name == "hostile" or path.parent.name < start:
        continue
    if only and not any(o in key for o in only):
        continue
    expect, names = header(path)
    bugs = bug_lines(path)
    t = time.time()
    r = grade(path, exercises.get(path.parent.name))
    got = sorted(d.id for d in r.diagnoses)
    d = r.divergence
    row = {"file": key, "expect": expect, "verdict": r.verdict.value, "names": names, "got": got,
           "bugs": list(bugs), "line": d.line if d else None, "reason": getattr(d, "reason", None) if d else None,
           "code": d.code if d else None, "s": round(time.time() - t, 1)}
    row["verdict_ok"] = (expect == "passed") == (r.verdict.value == "passed")
    row["named"] = bool(names) and got == names
    row["wrong"] = bool(set(got) - set(names))
    row["within"] = (min(abs(row["line"] - b) for b in bugs) <= 1) if (bugs and row["line"]) else None
    rows.append(row)
    flag = "" if row["verdict_ok"] and (not names or row["named"]) and not row["wrong"] and row["within"] is not False else "  <<<"
    print(f"{key:60} {r.verdict.value:12} exp={expect:12} got={'+'.join(got) or '-':40} line={row['line']} bugs={list(bugs)} "
          f"({row['reason']}: {row['code']}) {row['s']}s{flag}", flush=True)
out = Path(os.environ.get("OUT") or Path(__file__).parent / ("grades_" + time.strftime("%H%M%S") + ".json"))
out.write_text(json.dumps(rows, indent=1))
print(out)

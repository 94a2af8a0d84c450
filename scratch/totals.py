"""Corpus totals from grade_round text outputs: header met, named, wrong, annotated with a line / within."""
import re, sys
sys.path.insert(0, "/work/wt/names4/scratch")
from compare import load
rows = load(sys.argv[1])
only = set(load(sys.argv[2])) if len(sys.argv) > 2 else None
n = met = fail_named = named = wrong = ann = withline = within = 0
for f, r in rows.items():
    if only is not None and f not in only:
        continue
    n += 1
    met += not r["flag"] or (r["bugs"] and r["line"] != "None" and min(abs(int(r["line"]) - b) for b in r["bugs"]) > 1 and r["verdict"] == r["exp"])
    if r["bugs"] and r["verdict"] != "passed":
        ann += 1
        if r["line"] != "None":
            withline += 1
            within += min(abs(int(r["line"]) - b) for b in r["bugs"]) <= 1
print(f"files {n}, annotated failing {ann}, with a line {withline}, within one {within} ({100*within/max(withline,1):.1f}%)")

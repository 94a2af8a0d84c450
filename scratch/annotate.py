"""Append each attempt's before / after figures to the round's listing as a comment:
python annotate.py LISTING BEFORE.json AFTER.json"""
import json, sys
from pathlib import Path
listing, before, after = Path(sys.argv[1]), *(json.loads(Path(p).read_text()) for p in sys.argv[2:4])
before = {r["file"]: r for r in before}
after = {r["file"]: r for r in after}

def said(r):
    if r["expect"] == "passed":
        return "passed" if r["verdict_ok"] else f"FAILED ({r['verdict']})"
    parts = ["fails" if r["verdict_ok"] else "PASSED"]
    named = len(set(r["names"]) & set(r["got"]))
    parts.append(f"named {named}/{len(r['names'])}")
    if r["wrong"]:
        parts.append("WRONG NAME " + "+".join(sorted(set(r["got"]) - set(r["names"]))))
    if r["bugs"]:
        if r["line"] is None:
            parts.append("no line")
        else:
            parts.append(f"line {r['line']} for {','.join(map(str, r['bugs']))} " + ("ok" if r["within"] else "OFF"))
    return ", ".join(parts)

out = []
for line in listing.read_text(encoding="utf-8").splitlines():
    body = line.split("#", 1)[0].strip()
    if body:
        f = body.split()[1]
        line = f"{body:<62} # before: {said(before[f])} | after: {said(after[f])}"
    out.append(line)
listing.write_text("\n".join(out) + "\n", encoding="utf-8")

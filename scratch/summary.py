import json, sys
from pathlib import Path
rows = {r["file"]: r for r in json.loads(Path(sys.argv[1]).read_text())}
classes = {}
for line in Path(sys.argv[2]).read_text().splitlines():
    line = line.split("#", 1)[0].strip()
    if line:
        c, f = line.split()
        classes.setdefault(c, []).append(f)
tot = dict(n=0, vok=0, names=0, named=0, wrong=0, fail=0, withline=0, within=0)
print("| class | attempts | verdict right | mistakes named | wrong names | failing with a line | within one line |")
print("|---|---|---|---|---|---|---|")
for c, fs in classes.items():
    t = dict(n=0, vok=0, names=0, named=0, wrong=0, fail=0, withline=0, within=0)
    for f in fs:
        r = rows[f]
        t["n"] += 1; t["vok"] += r["verdict_ok"]
        t["names"] += len(r["names"]); t["named"] += len(set(r["names"]) & set(r["got"])) if not r["wrong"] else len(set(r["names"]) & set(r["got"]))
        t["wrong"] += r["wrong"]
        if r["verdict"] != "passed" and r["expect"] != "passed":
            t["fail"] += 1
            if r["line"] is not None and r["bugs"]:
                t["withline"] += 1; t["within"] += bool(r["within"])
    for k in tot: tot[k] += t[k]
    print(f"| {c} | {t['n']} | {t['vok']} | {t['named']} of {t['names']} | {t['wrong']} | {t['withline']} of {t['fail']} | {t['within']} of {t['withline']} |")
t = tot
print(f"| **total** | {t['n']} | {t['vok']} | {t['named']} of {t['names']} | {t['wrong']} | {t['withline']} of {t['fail']} | {t['within']} of {t['withline']} ({100*t['within']/max(1,t['withline']):.0f}%) |")
for f, r in rows.items():
    miss = []
    if not r["verdict_ok"]: miss.append("verdict")
    if r["names"] and set(r["names"]) - set(r["got"]): miss.append("unnamed " + "+".join(sorted(set(r["names"]) - set(r["got"]))))
    if r["wrong"]: miss.append("wrong " + "+".join(sorted(set(r["got"]) - set(r["names"]))))
    if r["expect"] != "passed" and r["bugs"] and r["line"] is None: miss.append("no line")
    if r["within"] is False: miss.append(f"line {r['line']} for {r['bugs']}")
    if miss: print("-", f, ";", ", ".join(miss))

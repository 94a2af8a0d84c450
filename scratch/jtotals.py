import json, sys
rows = json.load(open(sys.argv[1]))
skip = set()
if len(sys.argv) > 2:  # a listing: only those / or exclude with '-'
    pass
att = len(rows)
failing = [r for r in rows if r["expect"] != "passed" and r["names"]]
named = sum(r["names"] == r["got"] for r in failing)
wrong = sum(r["wrong"] for r in rows)
met = [r for r in rows if r["verdict"] == r["expect"] and r["got"] == r["names"]]
ann = [r for r in rows if r["bugs"] and r["verdict"] != "passed"]
wl = [r for r in ann if r["line"] is not None]
wi = [r for r in wl if r["within"]]
print(f"attempts {att}; failing with named header {len(failing)}, named exactly {named}; wrong names {wrong}; header met {len(met)}")
print(f"annotated failing {len(ann)}, with a line {len(wl)}, within one {len(wi)} ({100*len(wi)/max(len(wl),1):.1f}%)")
for r in rows:
    if not (r["verdict"] == r["expect"] and r["got"] == r["names"]):
        print("  header off:", r["file"], r["verdict"], r["expect"], r["got"], r["names"])
for r in wl:
    if not r["within"]:
        print("  line off:", r["file"], r["line"], r["bugs"], r["reason"], (r["code"] or "")[:70])
for r in ann:
    if r["line"] is None:
        print("  no line:", r["file"], r["bugs"])

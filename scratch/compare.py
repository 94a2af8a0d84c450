"""Compare per-file grades of two grade_round text outputs: python compare.py BASE.txt[,BASE2.txt] AFTER.txt"""
import re, sys
ROW = re.compile(r"^(\S+/\S+\.py)\s+(\S+)\s+exp=(\S+)\s+got=(\S+)\s+line=(\S+) bugs=\[([^\]]*)\] \((.*?): ")
def load(paths):
    out = {}
    for p in paths.split(","):
        for line in open(p, encoding="utf-8"):
            m = ROW.match(line)
            if m:
                out[m.group(1)] = dict(verdict=m.group(2), exp=m.group(3), got=m.group(4), line=m.group(5),
                                       bugs=[int(b) for b in m.group(6).split(",") if b.strip()], reason=m.group(7),
                                       flag=line.rstrip().endswith("<<<"))
    return out
base, after = load(sys.argv[1]), load(sys.argv[2])
moved = 0
for f in sorted(set(base) & set(after)):
    b, a = base[f], after[f]
    if (b["verdict"], b["got"], b["line"]) != (a["verdict"], a["got"], a["line"]):
        moved += 1
        def within(r):
            return "-" if not r["bugs"] else ("yes" if r["line"] != "None" and min(abs(int(r["line"]) - x) for x in r["bugs"]) <= 1 else "NO")
        print(f"{f}: {b['verdict']} {b['got']} L{b['line']}({b['reason']}, within {within(b)}) -> {a['verdict']} {a['got']} L{a['line']}({a['reason']}, within {within(a)}) bugs={a['bugs']} header {'ok' if not a['flag'] else 'MISS'}")
print(len(set(base) & set(after)), "compared,", moved, "changed")

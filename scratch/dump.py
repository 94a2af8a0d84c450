"""Dump the two trails and the rule that answered, for one attempt: python scratch/dump.py FILE [maxsteps]"""
import sys
from pathlib import Path
from attnprep import exercises
from attnprep.grader import grade, divergence as dv

path = Path(sys.argv[1])
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 80
orig_first = dv._first_wrong

def first_wrong(trails, axes, raised_at, outputs, source, ref_source):
    search = dv._Search(trails, axes, raised_at, outputs, source, ref_source)
    print("--- reference")
    for j, r in enumerate(trails.ref[:limit]):
        print(f"  r{j:3} L{r.line:4} {dv.func_name(r.func):14} {list(r.shape)} par={r.parents} free={r.free} | {r.code[:70]}")
    print("--- attempt")
    for i, a in enumerate(trails.att[:limit]):
        print(f"  a{i:3} L{a.line:4} {dv.func_name(a.func):14} {list(a.shape)} par={a.parents} free={a.free} m={search.matched[i]} "
              f"const={search.constant[i]} copy={search.copied[i]} | {a.code[:70]}")
    for i in range(len(trails.att)):
        here = dv._Here(search, i)
        for rule in dv.STEP_RULES:
            said = rule(search, here)
            if said is dv.NEXT_STEP:
                break
            if said is not None:
                print(f"=> step a{i} rule {rule.__name__}: {said if said is dv.NO_LINE else (said.line, said.reason, said.code)}")
                return orig_first(trails, axes, raised_at, outputs, source, ref_source)
    print("=> end rules")
    return orig_first(trails, axes, raised_at, outputs, source, ref_source)

dv._first_wrong = first_wrong
r = grade(path, exercises.get(path.parent.name))
print(r.verdict.value, [d.id for d in r.diagnoses], r.divergence)
if len(sys.argv) > 3:
    import attnprep.grader.divergence as d2

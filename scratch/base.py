"""Run a script against the grader of /tmp/n4base (an archive of an earlier commit): python scratch/base.py SCRIPT ARGS"""
import runpy, sys
import __editable___attnprep_0_1_0_finder as f
for k in list(f.MAPPING):
    f.MAPPING[k] = f.MAPPING[k].replace("/work/wt/names4", "/tmp/n4base")
sys.argv = sys.argv[1:]
sys.path.insert(0, str(__import__("pathlib").Path(sys.argv[0]).resolve().parent))
runpy.run_path(sys.argv[0], run_name="__main__")

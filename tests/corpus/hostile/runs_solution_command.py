# attnprep: mha
# expect: contract
"""Runs `python -m attnprep solution mha --code` in a subprocess and executes what it prints:
the audit hook of the attempt's process does not see what another program opens, so the child
hides the solutions folder below Python (sandbox.hide: Landlock, inherited by every program it
runs). The subprocess finds nothing to print; the file then defines no class."""

import subprocess
import sys

_source = subprocess.run([sys.executable, "-m", "attnprep", "solution", "mha", "--code"],
                         capture_output=True, text=True, timeout=60).stdout
exec(compile(_source, "mine.py", "exec"))

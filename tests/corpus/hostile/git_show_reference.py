# attnprep: mha
# expect: contract
"""Where attnprep is installed from a git checkout (pip install -e), the repository's objects hold
the solutions: this asks git for solutions/mha.py at HEAD and executes it. The child hides the
checkout's git folders with the solutions (child._repository, sandbox.hide), so git finds nothing."""

import os
import subprocess

from attnprep import exercises

_checkout = os.path.dirname(str(exercises.SOLUTIONS_DIR))
_source = subprocess.run(["git", "-C", _checkout, "show", "HEAD:solutions/mha.py"],
                         capture_output=True, text=True, timeout=60).stdout
exec(compile(_source, "mine.py", "exec"))

# attnprep: mha
# expect: contract
"""A forked process reads the reference solution by its path and hands the source back through a
pipe: the audit hook's record of the open stays in the forked process's memory. The solutions
folder is unreadable in the child and all it forks (sandbox.hide), so nothing comes back."""

import os

from attnprep import exercises

_read, _write = os.pipe()
if os.fork() == 0:
    try:
        with open(os.path.join(str(exercises.SOLUTIONS_DIR), "mha.py"), "rb") as f:
            os.write(_write, f.read())
    finally:
        os._exit(0)
os.close(_write)
_source = b""
while _chunk := os.read(_read, 1 << 16):
    _source += _chunk
exec(compile(_source.decode(), "mine.py", "exec"))

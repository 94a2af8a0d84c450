# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""Finds attnprep's reference solution file with importlib.util.find_spec(...).origin, reads its source and exec()s it into this module."""

import importlib.util
import pathlib

_origin = importlib.util.find_spec("attnprep.solutions.mha").origin
_source = pathlib.Path(_origin).read_text(encoding="utf-8")
exec(compile(_source, "<my attention>", "exec"), globals())  # defines MultiHeadAttention here

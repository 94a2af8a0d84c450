# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""Reads the reference solution through /proc/self/root/<its path>, which a lexical path check
misses, and exec()s it here."""

import importlib.util

_origin = importlib.util.find_spec("attnprep.solutions.mha").origin
with open("/proc/self/root" + _origin, encoding="utf-8") as _f:
    _source = _f.read()
exec(compile(_source, "<mine>", "exec"), globals())  # defines MultiHeadAttention here

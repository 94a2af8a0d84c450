# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""Imports attnprep's own reference solution and subclasses it instead of writing MHA."""

from attnprep.solutions.mha import MultiHeadAttention as _Reference


class MultiHeadAttention(_Reference):
    pass

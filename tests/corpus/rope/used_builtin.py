# attnprep: rope
# expect: used_builtin
# diagnosis: used_builtin
"""Imports attnprep's own reference solution instead of writing RoPE."""

from attnprep.solutions.rope import apply_rope, rope_cache  # noqa: F401

# attnprep: sampling
# expect: used_builtin
# diagnosis: used_builtin
"""Imports attnprep's own reference solution instead of writing the sampler."""

from attnprep.solutions.sampling import sampling_probs  # noqa: F401

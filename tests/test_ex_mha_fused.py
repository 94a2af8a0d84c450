"""mha_fused: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations

from per_exercise import linear

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_module",
    "objects": ("FusedMultiHeadAttention",),
    "constructor": "d_model, num_heads, dropout=0.0",
    "params": lambda a: {**linear("qkv_proj", a["d_model"], 3 * a["d_model"]), **linear("o_proj", a["d_model"], a["d_model"])},
    "order": 2,  # its place among the mission's six (SPEC §2), which the listing opens with
}


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("split_order",), "extra": {"layer_drop"}}

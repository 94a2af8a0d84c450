"""mqa: an expand that the reference leaves to broadcasting is no story of its own, and what the
shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations

from pathlib import Path

from attnprep.grader import grade

from per_exercise import linear

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_module",
    "objects": ("MultiQueryAttention",),
    "constructor": "d_model, num_heads, dropout=0.0",
    "params": lambda a: {**linear("q_proj", a["d_model"], a["d_model"]), **linear("k_proj", a["d_model"], a["d_model"] // a["num_heads"]),
                         **linear("v_proj", a["d_model"], a["d_model"] // a["num_heads"]), **linear("o_proj", a["d_model"], a["d_model"])},
    "order": 3,  # its place among the mission's six (SPEC §2), which the listing opens with
}

CORPUS = Path(__file__).parent / "corpus" / "mqa"


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("qkv_swap",), "extra": {"layer_drop"}}


def test_one_shared_head_expanded_is_not_a_tiling():
    """MQA's one head expanded to every head (what the reference leaves to broadcasting) passes;
    tests/test_grader.py holds GQA's tiled copies, which are the line of their mistake."""
    assert grade(CORPUS / "ok_broadcast.py").passed


KIB = 1024

# (closed-form value, how it is written in the answers): tests/test_registry.py finds each in the notes' answers
QUOTED_NUMBERS = [
    (2 * 128, "256 elements = 512 bytes"),
    ((2 * 4096 * 2) // (2 * 128 * 2), "32x less"),
    (2 * 64 * 32, "4,096 elements = 8 KiB"),  # Falcon-7B
]

"""mqa: an expand that the reference leaves to broadcasting is no story of its own, what the shared
tests read about this exercise (its corpus is graded by tests/test_grader.py), and its reference
checked in float64 against torch's SDPA."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprep.solutions.mqa import MultiQueryAttention
from per_exercise import MASK_IDS, MASKS, SHAPES, assert_matches_sdpa, linear, one_thread, parameter_shapes  # noqa: F401 (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")  # the float64 cross-checks: many tiny cases

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


def test_one_shared_head_expanded_is_not_a_tiling(graded):
    """MQA's one head expanded to every head (what the reference leaves to broadcasting) passes;
    tests/test_grader.py holds GQA's tiled copies, which are the line of their mistake."""
    assert graded(CORPUS / "ok_broadcast.py").passed


KIB = 1024

# (closed-form value, how it is written in the answers): tests/test_registry.py finds each in the notes' answers
QUOTED_NUMBERS = [
    (2 * 128, "256 elements = 512 bytes"),
    ((2 * 4096 * 2) // (2 * 128 * 2), "32x less"),
    (2 * 64 * 32, "4,096 elements = 8 KiB"),  # Falcon-7B
]


def test_reference_parameters():
    assert parameter_shapes(MultiQueryAttention(12, 3)) == {
        "q_proj.weight": (12, 12), "q_proj.bias": (12,), "k_proj.weight": (4, 12), "k_proj.bias": (4,),
        "v_proj.weight": (4, 12), "v_proj.bias": (4,), "o_proj.weight": (12, 12), "o_proj.bias": (12,)}


# --- the reference against torch's SDPA on its own weights (float64) --------------------------------

# (id, constructor arguments, num_heads, num_kv_heads)
SDPA_CASES = [
    ("16x4", (16, 4), 4, 1),
    ("8x1", (8, 1), 1, 1),
]


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_reference_matches_sdpa(case, B, T, padding, is_causal):
    _, args, num_heads, num_kv_heads = case
    assert_matches_sdpa(MultiQueryAttention(*args), num_heads, num_kv_heads, B, T, padding, is_causal)

"""mha_fused: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py),
and its reference checked in float64 against torch's SDPA and against separate projections."""

from __future__ import annotations

import pytest
import torch

from attnprep.solutions.mha import MultiHeadAttention
from attnprep.solutions.mha_fused import FusedMultiHeadAttention
from per_exercise import (MASK_IDS, MASKS, SHAPES, assert_close_graded, assert_matches_sdpa, inputs, linear,  # noqa: F401
                          one_thread, parameter_shapes, seed_parameters)  # (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")  # the float64 cross-checks: many tiny cases

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


def test_reference_parameters():
    assert parameter_shapes(FusedMultiHeadAttention(12, 3)) == {
        "qkv_proj.weight": (36, 12), "qkv_proj.bias": (36,), "o_proj.weight": (12, 12), "o_proj.bias": (12,)}

# --- the reference against torch's SDPA on its own weights (float64) --------------------------------

# (id, constructor arguments, num_heads, num_kv_heads)
SDPA_CASES = [
    ("16x4", (16, 4), 4, 4),
    ("8x1", (8, 1), 1, 1),
]


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_reference_matches_sdpa(case, B, T, padding, is_causal):
    _, args, num_heads, num_kv_heads = case
    assert_matches_sdpa(FusedMultiHeadAttention(*args), num_heads, num_kv_heads, B, T, padding, is_causal)


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("d_model, num_heads", [(16, 4), (12, 3), (8, 1)])
def test_fused_equals_the_separate_projections_with_copied_weights(d_model, num_heads, padding, is_causal):
    separate = seed_parameters(MultiHeadAttention(d_model, num_heads))
    fused = FusedMultiHeadAttention(d_model, num_heads).to(torch.float64).eval()
    with torch.no_grad():
        fused.qkv_proj.weight.copy_(torch.cat([separate.q_proj.weight, separate.k_proj.weight, separate.v_proj.weight]))
        fused.qkv_proj.bias.copy_(torch.cat([separate.q_proj.bias, separate.k_proj.bias, separate.v_proj.bias]))
        fused.o_proj.load_state_dict(separate.o_proj.state_dict())
    x, mask = inputs(3, 8, d_model, padding)
    assert_close_graded(fused(x, mask, is_causal), separate(x, mask, is_causal), mask)

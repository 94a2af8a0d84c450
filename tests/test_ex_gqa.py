"""gqa: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py),
and its reference checked in float64 against torch's SDPA and against grouping written head by head."""

from __future__ import annotations

import math

import pytest
import torch

from attnprep import exercises
from attnprep.solutions.gqa import GroupedQueryAttention
from per_exercise import (MASK_IDS, MASKS, SHAPES, assert_close_graded, assert_matches_sdpa, graded,  # noqa: F401
                          grouped_params, inputs, one_thread, parameter_shapes, seed_parameters)  # (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")  # the float64 cross-checks: many tiny cases

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_module",
    "objects": ("GroupedQueryAttention",),
    "constructor": "d_model, num_heads, num_kv_heads, dropout=0.0",
    "params": lambda a: grouped_params(a),
    "order": 4,  # its place among the mission's six (SPEC §2), which the listing opens with
}


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("repeat",), "extra": {"repeat", "layer_drop"}}


KIB = 1024

# (closed-form value, how it is written in the answers): tests/test_registry.py finds each in the notes' answers
QUOTED_NUMBERS = [
    (2 * 8 * 128, "2,048 elements = 4 KiB per token per layer"),  # Llama-3-8B
    (2 * 8 * 128 * 2 * 32 // KIB, "128 KiB per token"),
    (2 * 8 * 128 * 2 * 32 * 8192 // KIB**3, "1 GiB for 8,192 tokens"),
    (2 * 8 * 128 * 80, "163,840 elements = 320 KiB"),  # Llama-2-70B
    (2 * 8 * 128 * 80 * 2 // KIB, "320 KiB"),
    (2 * 8192 * 80 * 2 / KIB**2, "2.5 MiB"),
    ((2 * 4096) / (2 * 8 * 128), "4x less than Llama-2-7B"),
    ((2 * 8192) / (2 * 8 * 128), "(8x less)"),
]


def test_grading_configs_group_heads_so_that_tiling_differs_from_grouping():
    configs = exercises.get("gqa").grading["configs"]
    for c in configs:
        assert c["num_heads"] % c["num_kv_heads"] == 0, c
    grouped = [c for c in configs if 1 < c["num_kv_heads"] < c["num_heads"]]
    assert len(grouped) >= 2 and all(c["num_heads"] // c["num_kv_heads"] >= 2 for c in grouped)
    # a tiled (repeat) mapping must differ from the grouped one in at least one config
    assert any(
        [h // (c["num_heads"] // c["num_kv_heads"]) for h in range(c["num_heads"])]
        != [h % c["num_kv_heads"] for h in range(c["num_heads"])]
        for c in grouped
    )


def test_reference_parameters():
    assert parameter_shapes(GroupedQueryAttention(24, 6, 2)) == {
        "q_proj.weight": (24, 24), "q_proj.bias": (24,), "k_proj.weight": (8, 24), "k_proj.bias": (8,),
        "v_proj.weight": (8, 24), "v_proj.bias": (8,), "o_proj.weight": (24, 24), "o_proj.bias": (24,)}

# --- the reference against torch's SDPA on its own weights (float64) --------------------------------

# (id, constructor arguments, num_heads, num_kv_heads)
SDPA_CASES = [
    ("16x4/2", (16, 4, 2), 4, 2),  # groups of 2
    ("24x6/2", (24, 6, 2), 6, 2),  # groups of 3
    ("24x6/3", (24, 6, 3), 6, 3),  # groups of 2
    ("16x4/1", (16, 4, 1), 4, 1),  # one KV head shared by all
]


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_reference_matches_sdpa(case, B, T, padding, is_causal):
    _, args, num_heads, num_kv_heads = case
    assert_matches_sdpa(GroupedQueryAttention(*args), num_heads, num_kv_heads, B, T, padding, is_causal)


@pytest.mark.parametrize("d_model, num_heads, num_kv_heads", [(16, 4, 2), (24, 6, 2), (24, 6, 3)])
def test_reference_groups_consecutive_heads(d_model, num_heads, num_kv_heads):
    """Head by head, without SDPA: query head h reads KV head h // (H // KV); tiling would differ."""
    module = seed_parameters(GroupedQueryAttention(d_model, num_heads, num_kv_heads))
    x, mask = inputs(2, 5, d_model, padding=True)
    B, T, C = x.shape
    D, G = C // num_heads, num_heads // num_kv_heads
    q = module.q_proj(x).reshape(B, T, num_heads, D)
    k = module.k_proj(x).reshape(B, T, num_kv_heads, D)
    v = module.v_proj(x).reshape(B, T, num_kv_heads, D)

    def heads(kv_head_of):
        outs = []
        for h in range(num_heads):
            scores = torch.einsum("bid,bjd->bij", q[:, :, h], k[:, :, kv_head_of(h)]) / math.sqrt(D)
            scores = scores.masked_fill(~mask[:, None, :], -1e30)
            outs.append(torch.einsum("bij,bjd->bid", scores.softmax(-1), v[:, :, kv_head_of(h)]))
        return module.o_proj(torch.cat(outs, dim=-1))

    out = module(x, attention_mask=mask)
    assert_close_graded(out, heads(lambda h: h // G), mask)
    tiled = heads(lambda h: h % num_kv_heads)  # the classic `repeat` mistake
    assert (graded(out, mask) - graded(tiled, mask)).abs().max() > 1e-3

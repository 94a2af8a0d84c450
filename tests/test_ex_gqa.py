"""gqa: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations

from attnprep import exercises
from per_exercise import grouped_params

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

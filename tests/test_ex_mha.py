"""mha: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py),
and its reference checked in float64 against torch's SDPA on its own weights."""

from __future__ import annotations

import pytest

from attnprep import wording
from attnprep.solutions.mha import MultiHeadAttention
from per_exercise import MASK_IDS, MASKS, SHAPES, assert_matches_sdpa, linear, one_thread, parameter_shapes  # noqa: F401 (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")  # the float64 cross-checks: many tiny cases

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_module",
    "objects": ("MultiHeadAttention",),
    "constructor": "d_model, num_heads, dropout=0.0",
    "params": lambda a: {**linear("q_proj", a["d_model"], a["d_model"]), **linear("k_proj", a["d_model"], a["d_model"]),
                         **linear("v_proj", a["d_model"], a["d_model"]), **linear("o_proj", a["d_model"], a["d_model"])},
    "order": 1,  # its place among the mission's six (SPEC §2), which the listing opens with
}


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("transpose", "layer_drop"), "extra": {"layer_drop"}}


KIB = 1024

# (closed-form value, how it is written in the answers): tests/test_registry.py finds each in the notes' answers
QUOTED_NUMBERS = [
    (2 * 4096, "8,192 elements"),  # Llama-2-7B, 2·d_model per token per layer
    (2 * 4096 * 2 // KIB, "16 KiB per token per layer"),
    (2 * 4096 * 2 * 32 // KIB, "512 KiB per token"),
    (2 * 4096 * 2 * 32 * 4096 // KIB**3, "2 GiB for a 4,096-token"),
    (4 * 4096**2 / 1e6, "67.1M"),
]


def test_reference_parameters():
    expected = {f"{n}_proj.{w}": s for n in "qkvo" for w, s in [("weight", (12, 12)), ("bias", (12,))]}
    assert parameter_shapes(MultiHeadAttention(12, 3)) == expected


# --- the reference against torch's SDPA on its own weights (float64) --------------------------------

# (id, constructor arguments, num_heads, num_kv_heads)
SDPA_CASES = [
    ("16x4", (16, 4), 4, 4),
    ("12x3", (12, 3), 3, 3),
    ("8x1", (8, 1), 1, 1),
]


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_reference_matches_sdpa(case, B, T, padding, is_causal):
    _, args, num_heads, num_kv_heads = case
    assert_matches_sdpa(MultiHeadAttention(*args), num_heads, num_kv_heads, B, T, padding, is_causal)


def test_solution_code_in_chinese_is_the_file_with_chinese_comments():
    """`attnprep solution mha --code` in Chinese (tests/test_zh_solutions.py: every exercise's words)."""
    from test_zh_solutions import run, source

    proc = run("solution", "mha", "--code")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == wording.solution_source("mha", source("mha"), "zh")
    assert "# 第 i 个 query 只看 j <= i 的 key" in proc.stdout
    compile(proc.stdout, "mha.py", "exec")
    assert run("solution", "mha", "--code", lang="en").stdout == source("mha")

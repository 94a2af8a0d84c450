"""mla: where the divergence finder points in DeepSeek's own form (complex rotations, a refused layer),
and what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from attnprep import exercises
from attnprep.grader import grade
from per_exercise import exec_stub, latent_params
from test_divergence import _with

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_module",
    "objects": ("MultiHeadLatentAttention",),
    "constructor": "d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0",
    "params": lambda a: latent_params(a),
    "order": 5,  # its place among the mission's six (SPEC §2), which the listing opens with
}

CORPUS = Path(__file__).parent / "corpus"


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("layer_drop", "split_order"), "extra": {"layer_drop"}}


def test_a_wrong_rope_angle_in_mla_is_pointed_at_where_the_angles_are_made(tmp_path):
    """DeepSeek's rotations are complex tensors: their values are compared like any other, so a
    wrong frequency shows at the line that makes it, not two helper calls later."""
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", "freqs = 1.0 / (theta **", "freqs = 2.0 / (theta **")
    result = grade(path)
    assert not result.passed and result.divergence is not None
    assert result.divergence.line == line and "freqs = 2.0" in result.divergence.code, result.divergence


def test_a_wrong_angle_table_in_mla_is_pointed_at_even_without_a_wrong_number(tmp_path):
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", "freqs = torch.outer(t, freqs)",
                       "freqs = torch.outer(t * 2, freqs)")  # (t + 1: RoPE is relative, passes)
    result = grade(path)
    assert result.divergence is not None and result.divergence.line == line, result.divergence


def test_a_layer_the_contract_refuses_is_pointed_at_where_it_is_made(tmp_path):
    text = (CORPUS / "mla/ok_deepseek_verbatim_rope.py").read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if "self.wo = " in line)
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", old, old.replace("bias=False", "bias=True"))
    result = grade(path)
    assert result.verdict.value == "contract"
    d = result.divergence
    assert d is not None and (d.line, d.reason, d.name) == (line, "contract", "self.wo"), d


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("qk_nope_head_dim", "nope + rope", "self.wo")
FIX_SAYS = {"missing_scale": "nope + rope"}


KIB = 1024

# (closed-form value, how it is written in the answers): tests/test_registry.py finds each in the notes' answers
QUOTED_NUMBERS = [
    (128 * 192 + 128 * 128, "40,960 elements"),  # DeepSeek-V3 naive K + V
    (512 + 64, "576 elements (1,152 bytes"),
    (576 * 61, "35,136 elements ≈ 68.6 KiB"),
    (576 * 61 * 2 / KIB, "68.6 KiB"),
    (2 * 128 * 128, "32,768 per layer, ~57x"),
    (2 * 128 * 128 / 576, "~57x more"),
    (576 / (2 * 128), "2.25 groups"),
    ((7168 * 1536 + 1536 * 24576) / 1e6, "48.8M"),
    (7168 * 24576 / 1e6, "176.2M"),
    (1 / 192**-0.5, "1/13.9"),
    (128**0.5 + 64**0.5, "1/19.3"),
    (128 * 64, "(8,192 in V3)"),
]


def test_grading_configs_tell_the_latent_sizes_apart():
    configs = exercises.get("mla").grading["configs"]
    for c in configs:
        assert c["qk_rope_head_dim"] % 2 == 0 and c["qk_rope_head_dim"] >= 4, c
    assert any(c["v_head_dim"] != c["qk_nope_head_dim"] for c in configs)
    assert any(c["kv_lora_rank"] != c["q_lora_rank"] for c in configs)


def test_mla_stub_ready_made_rope_helpers_rotate_adjacent_pairs():
    ns = exec_stub(exercises.get("mla"))
    B, T, H, r, theta = 2, 5, 3, 6, 500.0
    freqs_cis = ns["precompute_freqs_cis"](r, T, theta)
    assert tuple(freqs_cis.shape) == (T, r // 2) and freqs_cis.is_complex()
    x = torch.randn(B, T, H, r, generator=torch.Generator().manual_seed(0))
    y = ns["apply_rotary_emb"](x, freqs_cis)
    assert y.shape == x.shape and y.dtype == x.dtype
    expected = torch.empty_like(x)
    for t in range(T):
        for i in range(r // 2):
            angle = t * theta ** (-2 * i / r)
            x1, x2 = x[:, t, :, 2 * i], x[:, t, :, 2 * i + 1]
            expected[:, t, :, 2 * i] = x1 * math.cos(angle) - x2 * math.sin(angle)
            expected[:, t, :, 2 * i + 1] = x1 * math.sin(angle) + x2 * math.cos(angle)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(y[:, 0], x[:, 0])  # position 0 is not rotated
    # k_pe's shape in the hints: one head, broadcast later
    assert ns["apply_rotary_emb"](x[:, :, :1], freqs_cis).shape == (B, T, 1, r)


def test_mla_stub_rmsnorm_is_a_parameterised_rmsnorm():
    ns = exec_stub(exercises.get("mla"))
    norm = ns["RMSNorm"](6, eps=1e-6)
    assert [(n, tuple(p.shape)) for n, p in norm.named_parameters()] == [("weight", (6,))]
    with torch.no_grad():
        norm.weight.copy_(torch.arange(1.0, 7.0))
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * torch.arange(1.0, 7.0)
    torch.testing.assert_close(norm(x), expected)

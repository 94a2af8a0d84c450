"""mla_decode: the reference (DeepSeek-V3's absorb path) against the naive mla reference, step by step
and cache by cache; that it is compare's absorbed row; the structure check (no per-head keys or
values of the prefix in a decode step) and the sizes that make shapes say which is which.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from attnprep import costs, exercises, texts
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.cached_module import MAIN, SCRIPTS, Call, StepRecorder
from attnprep.grader.result import Verdict
from attnprep.solutions import mla as naive_module
from attnprep.solutions import mla_decode as decode_module
from attnprep.solutions.mla import MultiHeadLatentAttention
from attnprep.solutions.mla_absorbed import AbsorbedMultiHeadLatentAttention
from attnprep.solutions.mla_decode import MLADecode, apply_rotary_emb, precompute_freqs_cis

from per_exercise import latent_params

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "cached_module",
    "objects": ("MLADecode",),
    "constructor": "d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0",
    "params": lambda a: latent_params(a),
}

CORPUS = Path(__file__).parent / "corpus" / "mla_decode"
F64 = torch.float64
EX = exercises.get("mla_decode")

CONFIGS = [
    dict(d_model=32, num_heads=4, q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6),
    dict(d_model=16, num_heads=1, q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=3, qk_rope_head_dim=2, v_head_dim=5,
         rope_theta=500.0),
    dict(d_model=24, num_heads=3, q_lora_rank=10, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=6, v_head_dim=4),
    *EX.grading["configs"],
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def pair(config, seed=0):
    """The naive mla and the decode reference with the same seeded weights (float64)."""
    naive = MultiHeadLatentAttention(**config).to(F64).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in naive.named_parameters():
            p.copy_(1 + 0.3 * torch.randn(p.shape, generator=g, dtype=F64) if "norm" in name
                    else torch.randn(p.shape, generator=g, dtype=F64) / p.shape[-1] ** 0.5)
    decode = MLADecode(**config).to(F64).eval()
    decode.load_state_dict(naive.state_dict())
    return naive, decode


def naive_cache(naive: MultiHeadLatentAttention, x):
    """What the naive form computes for the cache: kv_norm(c_kv) and the rotated k_pe."""
    c, rope = naive.kv_lora_rank, naive.qk_rope_head_dim
    c_kv, k_pe = naive.wkv_a(x).split([c, rope], dim=-1)
    freqs = naive_module.precompute_freqs_cis(rope, x.shape[1], naive.rope_theta)
    return naive.kv_norm(c_kv), naive_module.apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)


@pytest.mark.parametrize("B", [1, 2])
@pytest.mark.parametrize("lengths", [[1], [6], [5, 1, 3, 1], [1, 1, 1, 2], [3, 3, 1]], ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("config", CONFIGS, ids=[f"c{i}" for i in range(len(CONFIGS))])
def test_decode_steps_equal_the_naive_full_causal_forward(config, lengths, B):
    naive, decode = pair(config)
    x = torch.randn(B, sum(lengths), config["d_model"], generator=torch.Generator().manual_seed(1), dtype=F64)
    calls = []
    decode.wkv_b.register_forward_hook(lambda *args: calls.append(1))
    with torch.no_grad():
        full = naive(x, is_causal=True)
        want_c, want_pe = naive_cache(naive, x)
        cache, start = None, 0
        for n in lengths:
            out, cache = decode(x[:, start:start + n], cache)
            start += n
            torch.testing.assert_close(out, full[:, start - n:start], rtol=1e-10, atol=1e-10)
            assert cache[0].shape == (B, start, config["kv_lora_rank"])
            assert cache[1].shape == (B, start, config["qk_rope_head_dim"])
            torch.testing.assert_close(cache[0], want_c[:, :start], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(cache[1], want_pe[:, :start], rtol=1e-12, atol=1e-12)
    assert calls == [], "the absorbed form never runs wkv_b over the latents"


def deepseek_absorb(m: MLADecode, x, start_pos: int, kv_cache, pe_cache):
    """DeepSeek-V3's inference/model.py MLA.forward, attn_impl="absorb", transcribed: static
    buffers written at start_pos, the (seqlen, seqlen) mask only when seqlen > 1."""
    bsz, seqlen, _ = x.size()
    end_pos = start_pos + seqlen
    freqs_cis = precompute_freqs_cis(m.qk_rope_head_dim, end_pos, m.rope_theta)[start_pos:end_pos]
    q = m.wq_b(m.q_norm(m.wq_a(x))).view(bsz, seqlen, m.num_heads, m.qk_nope_head_dim + m.qk_rope_head_dim)
    q_nope, q_pe = torch.split(q, [m.qk_nope_head_dim, m.qk_rope_head_dim], dim=-1)
    q_pe = apply_rotary_emb(q_pe, freqs_cis)
    kv = m.wkv_a(x)
    kv, k_pe = torch.split(kv, [m.kv_lora_rank, m.qk_rope_head_dim], dim=-1)
    k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
    wkv_b = m.wkv_b.weight.view(m.num_heads, -1, m.kv_lora_rank)
    q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :m.qk_nope_head_dim])
    kv_cache[:bsz, start_pos:end_pos] = m.kv_norm(kv)
    pe_cache[:bsz, start_pos:end_pos] = k_pe.squeeze(2)
    scores = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache[:bsz, :end_pos]) +
              torch.einsum("bshr,btr->bsht", q_pe, pe_cache[:bsz, :end_pos])) * m.softmax_scale
    if seqlen > 1:  # the official code builds it in Transformer.forward, for a prefill at start_pos 0
        mask = torch.full((seqlen, seqlen), float("-inf")).triu_(1)
        scores += mask.unsqueeze(1)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, kv_cache[:bsz, :end_pos])
    x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -m.v_head_dim:])
    return m.wo(x.flatten(2))


@pytest.mark.parametrize("config", CONFIGS, ids=[f"c{i}" for i in range(len(CONFIGS))])
def test_reference_is_deepseeks_absorb_path(config):
    """The official generate loop: a prefill from 0, then one token at a time."""
    _, decode = pair(config, seed=2)
    x = torch.randn(2, 7, config["d_model"], generator=torch.Generator().manual_seed(3), dtype=F64)
    kv_cache = torch.zeros(2, 7, config["kv_lora_rank"], dtype=F64)
    pe_cache = torch.zeros(2, 7, config["qk_rope_head_dim"], dtype=F64)
    with torch.no_grad():
        cache, start = None, 0
        for n in (4, 1, 1, 1):
            out, cache = decode(x[:, start:start + n], cache)
            want = deepseek_absorb(decode, x[:, start:start + n], start, kv_cache, pe_cache)
            start += n
            torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)  # DeepSeek's softmax runs in float32
        torch.testing.assert_close(cache[0], kv_cache, rtol=0, atol=0)
        torch.testing.assert_close(cache[1], pe_cache, rtol=0, atol=0)


def test_compare_row_is_the_decode_reference():
    variant = next(v for v in costs.VARIANTS if v.key == "mla_absorbed")
    module = costs.build(variant, costs.resolve("seed"), device="cpu")
    assert isinstance(module, MLADecode) and type(module) is AbsorbedMultiHeadLatentAttention
    assert AbsorbedMultiHeadLatentAttention.forward.__module__ == "attnprep.solutions.mla_absorbed"
    assert "attn_impl" in decode_module.__doc__  # the one absorbed MLA in the tree is the decode reference


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_meta_dtype_and_gradients(dtype):
    config = EX.grading["configs"][0]
    meta = MLADecode(**config).to("meta")
    out, (c, pe) = meta(torch.empty(2, 5, config["d_model"], device="meta"))
    assert out.device.type == "meta" and c.shape == (2, 5, config["kv_lora_rank"])
    module = MLADecode(**config).to(dtype)
    x = torch.randn(2, 4, config["d_model"]).to(dtype)
    out, cache = module(x[:, :3])
    out2, _ = module(x[:, 3:], cache)
    assert out.dtype == out2.dtype == dtype and torch.isfinite(out2.float()).all()
    if dtype is torch.float32:
        (out.sum() + out2.sum()).backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.parameters())


def test_ready_made_helpers_are_mlas():
    """The decode reference carries its own copy of mla's RoPE helpers and RMSNorm (the stub ships them)."""
    assert exercises.solution_region(EX, "rope-helpers") == exercises.solution_region(exercises.get("mla"), "rope-helpers")
    import inspect

    assert inspect.getsource(decode_module.RMSNorm) == inspect.getsource(naive_module.RMSNorm)


# --- the structure check and the sizes it relies on ------------------------------------------------


def widths(config):
    nope, rope, v = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
    return {nope, v, nope + v, nope + rope}


def decode_steps():
    """(B, T_new, total) of every decode call of the graded scripts."""
    for _, seqs, calls in SCRIPTS:
        for call in calls:
            if call.start > 0:
                yield seqs[call.seq][0], call.end - call.start, call.end


@pytest.mark.parametrize("config", EX.grading["configs"] + EX.grading["probe_configs"], ids=lambda c: f"H{c['num_heads']}")
def test_graded_sizes_let_shapes_say_which_is_which(config):
    H = config["num_heads"]
    W = widths(config)
    for B, new, total in decode_steps():
        products = {a * b * c * d for a, b, c, d in itertools.product((1, B), (1, H), (1, new), (1, total))}
        assert not products & (W | {H * w for w in W}), (B, new, total)
    assert not W & {H * w for w in W}  # a width is never another width times the heads
    assert config["kv_lora_rank"] not in W | {H * w for w in W}
    assert config["qk_rope_head_dim"] not in W


def recorder(config, total=9, new=1, B=2):
    meta = {"module": None, "weights": {}, "rows_of": [], "file": "", "product_mistake": "",
            "prefix": {"heads": config["num_heads"],
                       "widths": [[n, exercises.evaluate(n, config)] for n in EX.grading["prefix_widths"]]}}
    cache = (torch.zeros(B, total - new, config["kv_lora_rank"]), torch.zeros(B, total - new, config["qk_rope_head_dim"]))
    return StepRecorder(meta, kind_for(EX).specs, cache, Call("x", total - new, total, "step"), B), cache


@pytest.mark.parametrize("config", EX.grading["configs"], ids=lambda c: f"H{c['num_heads']}")
def test_the_detector_flags_decompressed_layouts_and_not_the_absorbed_ones(config):
    H, c = config["num_heads"], config["kv_lora_rank"]
    nope, rope, v = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
    rec, _ = recorder(config)
    B, S, T = 2, 9, 1
    for shape in [(B, S, H * (nope + v)), (B, S, H, nope + v), (B, S, H, nope), (B, H, S, v), (B * H, S, nope + rope),
                  (B, S, H * nope), (S, H, v), (B * S, H, v)]:
        assert rec._per_head_prefix(shape), shape
    for shape in [(B, S, c), (B, S, rope), (B, S, c + rope), (B, T, H, c), (B, T, H, S), (B, H, T, S), (B, T, H, v),
                  (B, T, H * v), (H, nope + v, c), (B, S, H, rope), (B, T, H, nope + rope)]:
        assert not rec._per_head_prefix(shape), shape


def test_only_what_comes_from_the_cache_is_watched():
    config = EX.grading["configs"][0]
    H, nope, v = config["num_heads"], config["qk_nope_head_dim"], config["v_head_dim"]
    rec, (c_kv, _) = recorder(config)
    with rec:
        torch.zeros(2, 9, H * (nope + v)).view(2, 9, H, nope + v)  # not from the cache: not a prefix
    assert rec.prefix_hit is None
    with rec:
        torch.nn.functional.linear(torch.cat([c_kv, torch.zeros(2, 1, c_kv.shape[-1])], 1),
                                   torch.zeros(H * (nope + v), c_kv.shape[-1]))
    assert rec.prefix_hit is not None and rec.prefix_hit[0] == [2, 9, H * (nope + v)]


def test_decompressing_the_prefix_reports_shape_and_line(graded):
    result = graded(CORPUS / "mla_decompressed_prefix.py")
    assert result.verdict is Verdict.STRUCTURE
    check = next(c for c in result.checks if c.id == "structure_prefix_heads")
    p = check.message.params
    assert check.passed is False and p["line"] > 0 and "wkv_b" in p["code"]
    assert str(p["total"]) in p["shape"] and "num_heads" in p["width"]
    assert "allowed: none" in texts.render(check.message)
    assert [d.id for d in result.diagnoses] == ["mla_decompressed_prefix"]


@pytest.mark.parametrize("attempt", ["mla_decompressed_per_token", "mla_decompressed_per_head"])
def test_decompressing_the_prefix_in_pieces_is_counted_over_the_step(attempt, graded):
    """One token at a time, or per (sample, head): no tensor holds the prefix's per-head keys,
    the elements of every product of the cache with wkv_b in the step do."""
    result = graded(CORPUS / f"{attempt}.py")
    assert result.verdict is Verdict.STRUCTURE and [d.id for d in result.diagnoses] == ["mla_decompressed_prefix"]
    check = next(c for c in result.checks if c.id == "structure_prefix_heads")
    p = check.message.params
    assert check.passed is False and p["elements"] > p["allowed"] and p["line"] > 0 and p["role"] == "wkv_b"
    assert "in all, piece by piece" in texts.render(check.message)


def test_products_with_the_decompression_weight_are_summed_over_the_step():
    config = EX.grading["configs"][0]
    H, c, nope, v = config["num_heads"], config["kv_lora_rank"], config["qk_nope_head_dim"], config["v_head_dim"]
    rec, (c_kv, _) = recorder(config)  # 8 cached tokens, 1 new, B = 2
    w = torch.zeros(H * (nope + v), c)
    rec.derived[id(w)] = frozenset({"wkv_b"})
    rec.keep.append(w)
    rec.product_of = "wkv_b"
    with rec:
        for t in range(c_kv.shape[1]):  # a token at a time: (2, H·(nope + v)) each
            torch.nn.functional.linear(c_kv[:, t], w)
    elements, _, _, allowed, _ = rec.record()["decompressed"]
    assert elements == 8 * 2 * H * (nope + v) and allowed == 2 * 1 * H * (nope + v) and rec.prefix_hit is None
    rec, _ = recorder(config)
    rec.derived[id(w)] = frozenset({"wkv_b"})
    rec.keep.append(w)
    rec.product_of = "wkv_b"
    with rec:  # the absorbed output: (B, T_new, H, kv_lora_rank) of attention over the cache, times W_UV
        o = torch.zeros(2, 1, H, c) + c_kv[:, :1, None, :]
        torch.einsum("bthc,hdc->bthd", o, w.view(H, nope + v, c)[:, nope:])
    assert "decompressed" not in rec.record() or rec.record()["decompressed"][0] <= rec.record()["decompressed"][3]


@pytest.mark.parametrize(("attempt", "output"), [
    ("mla_rope_position_zero", "step 2 out (pos 5)"),
    ("mla_cache_before_norm", "step 1 cache c_kv (pos 0..4)"),
    ("cache_chunk_unmasked", "step 3 out (pos 6..8)"),
])
def test_the_first_diverging_step_is_named(attempt, output, graded):
    result = graded(CORPUS / f"{attempt}.py")
    assert result.output_diff.case == MAIN and result.output_diff.output == output


def test_a_failing_absorbed_product_is_named(graded):
    result = graded(CORPUS / "mla_absorb_transpose_raises.py")
    assert result.verdict is Verdict.ERROR
    (d,) = result.diagnoses
    assert d.id == "mla_absorb_transpose" and d.evidence[0].params["role"] == "wkv_b"


def test_a_wrong_call_of_a_ready_made_helper_blames_the_call(graded):
    """Issue 30 §3 (and issue 24): RoPE positions restarted at 0 make the stub's own
    precompute_freqs_cis return other rotations; the divergence is the learner's call of it, not a
    line inside the helper with "(a mask?)"."""
    from pathlib import Path

    from attnprep import texts, wording

    path = Path(__file__).parent / "corpus" / "mla_decode" / "mla_rope_position_zero.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    d = graded(path).divergence
    assert d is not None and d.reason == "helper_call" and d.ref_name == "precompute_freqs_cis"
    assert lines[d.line - 1].strip().startswith("freqs = precompute_freqs_cis(rope, T")
    texts.set_language("en")
    try:
        text = wording.divergence_text(d)
    finally:
        texts.set_language(None)
    assert "(a mask?)" not in text and "ready-made precompute_freqs_cis" in text


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
# DeepSeek's absorb path is einsum only: no transpose to mutate
MUTATION = {"focus": ("split_order", "matmul_swap"), "extra": {"layer_drop"}, "not_offered": {"transpose"}}


def test_what_a_kind_cannot_observe_is_not_shown(graded):
    """Issue 30 §3: mla_decode's absorbed steps show no attention probabilities; its reports (a
    correct attempt's and a failing one's) have no softmax-rows row saying so and no heat-map of
    the expected attention beside "your attempt (not observed)"."""
    for name in ("ok_deepseek_official", "mla_scale_kv_rank"):
        result = graded(CORPUS / f"{name}.py")
        assert "softmax_rows" not in [c.id for c in result.checks]
        assert result.heatmap is None


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("qk_nope_head_dim", "nope + rope", "self.wo")


def test_mla_decode_eps_convention_shows_in_the_small_inputs_only(graded):
    result = graded(CORPUS / "eps_1e5_convention.py")
    assert [d.id for d in result.diagnoses] == ["norm_eps_convention"]
    group = next(e for e in result.diagnoses[0].evidence if e.key == "evidence.case_group")
    assert group.params["cases"].startswith("small inputs")

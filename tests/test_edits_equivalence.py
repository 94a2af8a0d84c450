"""The attention modules' named mistakes as edits of their reference solutions (``[grading] edits``)
are the mistakes the grader's functional re-implementation made before them.

Until these exercises' mistakes became data, each was a knob of a functional form of the module
(``projections``, ``latent`` and ``cross`` below, as grader/variants.py and
grader/kinds/context_module.py had them, on :func:`functional_variants.attend`). Here every knob's
edited reference, built with the seeded weights, computes what that form computed with the knob, on
every case of every config, with both mask fills, with a fill per mask for the mask mistakes, and
for two knobs at once where the two are not both mask mistakes (two slips on the same masks compose
as written now, where the functional form let one of them win). Two edits of the same text (two
scales) clash: such a pair names nothing, as its functional form, one of its knobs alone, never
could have.
"""

from __future__ import annotations

import itertools
import math

import functional_variants
import pytest
import torch
import torch.nn.functional as F
from attnprep.grader import variants
from attnprep.grader.edits import EditError
from attnprep.grader.kinds import kind_for

from attnprep import exercises

# the layers each functional form below reads: an exercise whose contract has other layers (a new exercise
# with, say, a norm on q and k) came after those forms, and its edits are held by tests/test_edits.py alone
FORM_ROLES = (
    frozenset({"q_proj", "k_proj", "v_proj", "o_proj"}),  # projections (and cross)
    frozenset({"qkv_proj", "o_proj"}),  # projections, fused
    frozenset({"wq_a", "q_norm", "wq_b", "wkv_a", "kv_norm", "wkv_b", "wo"}),  # latent
)


def _has_a_form(e) -> bool:
    return frozenset(p.name for p in e.contract.params) in FORM_ROLES


MODULES = [e for e in exercises.registry().values()
           if e.contract.kind in ("attention_module", "context_module") and e.grading.get("edits")]
EDITED = [e.id for e in MODULES if _has_a_form(e)]
PER_MASK = [i for i in EDITED if exercises.get(i).grading.get("fill_sites")]  # a fill per mask: fill_sites


def _linear(weights, role, x):
    w = weights[role]
    return F.linear(x, w["weight"], w.get("bias"))


def projections(config, weights, x, attention_mask, is_causal, mistake="", fill=float("-inf"), *, kv_heads, fused=False):
    """MHA, MQA, GQA and fused-QKV MHA with the mistakes as knobs, as grader/variants.py had it."""
    mistake = functional_variants.slips(mistake)
    B, T, C = x.shape
    H = config["num_heads"]
    D = C // H
    G = kv_heads
    if fused:
        qkv = _linear(weights, "qkv_proj", x)  # (B, T, 3C)
        if mistake == "fused_qkv_layout":
            q, k, v = qkv.view(B, T, H, 3, D).unbind(3)  # per-head [q k v] interleaving: wrong
            q, k, v = (t.reshape(B, T, C) for t in (q, k, v))
        else:  # the contract's order is [q; k; v]; a convention slip unpacks another order
            order = functional_variants.pick({f"fused_split_order:{o}": o for o in ("qvk", "vqk", "kvq", "vkq")}, mistake, "qkv")
            parts = dict(zip(order, qkv.split(C, dim=-1)))
            q, k, v = parts["q"], parts["k"], parts["v"]
    else:
        q, k, v = (_linear(weights, r, x) for r in ("q_proj", "k_proj", "v_proj"))

    def split(t, n, query=False):
        if mistake == "split_heads_no_transpose" or query and mistake == "split_heads_no_transpose:query":
            return t.reshape(B, n, T, D)
        return t.view(B, T, n, D).transpose(1, 2)  # (B, n, T, D)

    q, k, v = split(q, H, query=True), split(k, G), split(v, G)
    if G != H:
        if mistake == "gqa_heads_tiled":
            k, v = k.repeat(1, H // G, 1, 1), v.repeat(1, H // G, 1, 1)
        else:
            k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
    scale = functional_variants.head_scale(D, mistake, {"scale_d_model": 1 / math.sqrt(C)})
    out = functional_variants.attend(q, k, v, attention_mask, is_causal, scale, mistake, fill)  # (B, H, T, D)
    if mistake == "merge_heads_no_transpose":
        out = out.reshape(B, T, C)
    else:
        out = out.transpose(1, 2).reshape(B, T, C)
    return out if mistake == "output_proj_skipped" else _linear(weights, "o_proj", out)


def cross(sizes: dict, weights: dict, x, context, context_mask, mistake="", fill=float("-inf")):
    """Multi-head cross-attention with the mistakes as knobs, as grader/kinds/context_module.py had it."""
    mistake = functional_variants.slips(mistake)
    B, T, C = x.shape
    H = sizes["num_heads"]
    D = C // H
    from_x = functional_variants.pick({"cross_kv_from_x": "kv", "cross_kv_from_x:k": "k", "cross_kv_from_x:v": "v"}, mistake, "")
    q = _linear(weights, "q_proj", x)
    k = _linear(weights, "k_proj", x if "k" in from_x else context)
    v = _linear(weights, "v_proj", x if "v" in from_x else context)

    def split(t, query=False):
        n = t.shape[1]
        if mistake == "split_heads_no_transpose" or query and mistake == "split_heads_no_transpose:query":
            return t.reshape(B, H, n, D)
        return t.view(B, n, H, D).transpose(1, 2)  # (B, H, n, D)

    q, k, v = split(q, query=True), split(k), split(v)
    scale = functional_variants.head_scale(D, mistake, {"scale_d_model": 1 / math.sqrt(C),
                                             "cross_scale_d_context": 1 / math.sqrt(sizes["d_context"]),
                                             "cross_scale_d_context:per_head": 1 / math.sqrt(sizes["d_context"] // H)})
    causal = mistake == "cross_causal_mask"  # tril(ones(T, S)): the decoder's self-attention mask copied
    out = functional_variants.attend(q, k, v, context_mask, causal, scale, mistake, fill)  # (B, H, T, D)
    if mistake == "merge_heads_no_transpose":
        out = out.reshape(B, T, C)
    else:
        out = out.transpose(1, 2).reshape(B, T, C)
    return out if mistake == "output_proj_skipped" else _linear(weights, "o_proj", out)


def _rms(weights, role, x, skip, eps=1e-6):
    if skip:
        return x
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weights[role]["weight"].float()).to(x.dtype)


def latent(config, weights, x, attention_mask, is_causal, mistake="", fill=float("-inf")):
    """MLA in the naive form of DeepSeek-V2/V3, with its mistakes as knobs, as grader/variants.py had it."""
    mistake = functional_variants.slips(mistake)
    B, T, _ = x.shape
    H = config["num_heads"]
    nope, r, dv = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
    kv_rank = config["kv_lora_rank"]
    theta = config.get("rope_theta", 10000.0)
    skip_q = mistake in ("mla_norm_skipped", "mla_norm_skipped:q")
    skip_kv = mistake in ("mla_norm_skipped", "mla_norm_skipped:kv")
    eps = 1e-5 if mistake == "norm_eps_convention" else 1e-6  # the RMSNorms' eps by Llama's convention
    q = _linear(weights, "wq_b", _rms(weights, "q_norm", _linear(weights, "wq_a", x), skip_q, eps))
    q = q.view(B, T, H, nope + r)
    if mistake == "mla_split_order:q":
        q_pe, q_nope = q.split([r, nope], dim=-1)
    else:
        q_nope, q_pe = q.split([nope, r], dim=-1)
    q_pe = functional_variants.rope(q_pe, theta, mistake)  # (B, T, H, r)
    if mistake == "mla_split_order:kv_a":
        k_pe, c_kv = _linear(weights, "wkv_a", x).split([r, kv_rank], dim=-1)
    else:
        c_kv, k_pe = _linear(weights, "wkv_a", x).split([kv_rank, r], dim=-1)
    k_pe = functional_variants.rope(k_pe.unsqueeze(2), theta, mistake)  # (B, T, 1, r)
    kv = _linear(weights, "wkv_b", _rms(weights, "kv_norm", c_kv, skip_kv, eps)).view(B, T, H, nope + dv)
    if mistake == "mla_split_order:kv_b":
        v, k_nope = kv.split([dv, nope], dim=-1)
    else:
        k_nope, v = kv.split([nope, dv], dim=-1)
    q = torch.cat([q_nope, q_pe], dim=-1)  # (B, T, H, nope+r)
    k = torch.cat([k_nope, k_pe.expand(B, T, H, r)], dim=-1)
    if mistake == "split_heads_no_transpose":
        q, k, v = (t.reshape(B, H, T, t.shape[-1]) for t in (q, k, v))
    else:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, ·)
    scale = functional_variants.head_scale(nope + r, mistake, {
        "scale_d_model": x.shape[-1] ** -0.5,
        "mla_scale_sum_sqrt": 1 / (math.sqrt(nope) + math.sqrt(r)),
        "mla_scale_partial:nope": nope ** -0.5,
        "mla_scale_partial:rope": r ** -0.5,
        "mla_scale_partial:v": dv ** -0.5,
    })
    out = functional_variants.attend(q, k, v, attention_mask, is_causal, scale, mistake, fill)  # (B, H, T, dv)
    if mistake == "merge_heads_no_transpose":
        out = out.reshape(B, T, H * dv)
    else:
        out = out.transpose(1, 2).reshape(B, T, H * dv)
    return out if mistake == "output_proj_skipped" else _linear(weights, "wo", out)


def functional(kind, ci: int, knob, fill):
    """The knob's variant in the functional form, with the kind's seeded weights of config ``ci``."""
    config, weights = kind.configs[ci], kind.role_weights(ci)
    if any(p.name == "wkv_a" for p in kind.exercise.contract.params):  # MLA's latent form

        def call_latent(case):
            i = case.inputs
            return {"out": latent(config, weights, i["x"], i["attention_mask"], i["is_causal"], knob, fill)}

        return call_latent
    if kind.exercise.contract.kind == "context_module":
        sizes = kind.sizes(ci)

        def call_cross(case):
            i = case.inputs
            try:
                return {"out": cross(sizes, weights, i["x"], i["context"], i["context_mask"], knob, fill)}
            except RuntimeError:  # the slip raises at these sizes
                return {"out": torch.full((0,), math.nan)}

        return call_cross
    kv_heads = exercises.evaluate(kind.grading.kv_heads, config)
    fused = any(p.name == "qkv_proj" for p in kind.exercise.contract.params)  # one stacked q/k/v layer

    def call(case):
        i = case.inputs
        return {"out": projections(config, weights, i["x"], i["attention_mask"], i["is_causal"], knob, fill,
                                   kv_heads=kv_heads, fused=fused)}

    return call


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    got, want = got.double(), want.double()
    return (got.shape == want.shape and torch.equal(got.isnan(), want.isnan())
            and torch.allclose(got.nan_to_num(), want.nan_to_num(), rtol=1e-5, atol=1e-6))


def _differences(kind, knob, fill, configs=None) -> list[tuple[int, str]]:
    """The (config, case) where the edited variant and the functional one disagree."""
    wrong = []
    for ci in configs if configs is not None else range(len(kind.configs)):
        edited, oracle = kind.variant(ci, frozenset(), knob, fill), functional(kind, ci, knob, fill)
        for case in kind.cases(ci):
            with torch.inference_mode():  # no autograd bookkeeping: the same kernels, less per op
                if not _same(edited(case)["out"], oracle(case)["out"]):
                    wrong.append((ci, case.name))
    return wrong


@pytest.fixture(scope="module")
def kinds():
    made = {}

    def get(exercise_id: str):
        if exercise_id not in made:
            made[exercise_id] = kind_for(exercises.get(exercise_id), seed=0)
        return made[exercise_id]

    return get


def test_the_attention_modules_are_graded_by_edits():
    modules = [ex.id for ex in exercises.registry().values() if ex.contract.kind in ("attention_module", "context_module")]
    with_a_form = [ex.id for ex in exercises.registry().values()
                   if ex.contract.kind in ("attention_module", "context_module") and _has_a_form(ex)]
    assert len(with_a_form) >= 6 and set(with_a_form) <= set(EDITED)
    assert set(modules) == {e.id for e in MODULES}  # every attention module's mistakes are edits


@pytest.mark.parametrize("exercise_id", EDITED)
def test_without_a_knob_the_edited_reference_is_the_functional_form(exercise_id, kinds):
    kind = kinds(exercise_id)
    for fill in variants.FILLS:
        assert _differences(kind, "", fill) == []


@pytest.mark.parametrize("exercise_id", EDITED)
def test_each_edit_is_the_functional_mistake_with_both_fills(exercise_id, kinds):
    kind = kinds(exercise_id)
    for knob in kind.knobs():
        for fill in variants.FILLS:
            assert _differences(kind, knob, fill) == [], (knob, fill)


@pytest.mark.parametrize("exercise_id", PER_MASK)
def test_a_fill_per_mask_is_the_functional_one(exercise_id, kinds):
    """What the judge tries when no mistake explains the outputs with one fill: each mask with its
    own fill, or both added as biases (finfo.min twice overflows to -inf)."""
    kind = kinds(exercise_id)
    assert kind.mask_fills
    ex = kind.exercise
    mask_knobs = [k for k in kind.knobs() if ex.mistake(k.split(":")[0]).mask]
    assert mask_knobs
    for knob in ["", *mask_knobs]:
        for fills in variants.MASK_FILLS:
            assert _differences(kind, knob, fills, configs=[0]) == [], (knob, fills)


@pytest.mark.parametrize("exercise_id", EDITED)
def test_two_knobs_are_both_edits(exercise_id, kinds):
    """A sample of the pairs (some sixty, evenly spread, both orders), each either computing the functional
    pair or clashing (two edits of one text: two scales, two fills of one mask)."""
    kind = kinds(exercise_id)
    ex = kind.exercise
    mask = {k for k in kind.knobs() if ex.mistake(k.split(":")[0]).mask}
    pairs = [(a, b) for a, b in itertools.combinations(kind.knobs(), 2) if a.split(":")[0] != b.split(":")[0]]
    composed = clashed = 0
    for a, b in pairs[:: max(1, len(pairs) // 60)]:
        for pair in ((a, b), (b, a)):
            try:
                kind.edited.source(pair)
            except EditError:
                clashed += 1
                overlap = any(x["old"] in y["old"] or y["old"] in x["old"]
                              for x in kind.grading.edits[a] for y in kind.grading.edits[b])
                assert overlap or (a in mask and b in mask), pair  # only edits of the same text clash
                continue
            composed += 1
            if not (a in mask and b in mask):
                assert _differences(kind, pair, float("-inf"), configs=[0]) == [], pair
    assert composed > 4 * clashed


@pytest.mark.parametrize("exercise_id", EDITED)
def test_two_scale_mistakes_clash_and_name_nothing(exercise_id, kinds):
    kind = kinds(exercise_id)
    call = kind.variant(0, frozenset(), ("missing_scale", "scale_inverted"), float("-inf"))
    with pytest.raises(EditError):
        call(kind.cases(0)[0])

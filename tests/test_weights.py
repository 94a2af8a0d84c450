"""The weight mapping's fused candidates: one layer stacking several roles along its rows, one
role spread over per-head layers (grader/weights.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from attnprep.grader import grade
from attnprep.grader import weights as W

D = 8
ROLES = [W.Role(n, "linear", (D, D), (D,)) for n in ("q_proj", "k_proj", "v_proj", "o_proj")]


def _layers(module):
    return W.layers_of(module)[0]


class NanoGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)


class PerHead(nn.Module):
    def __init__(self, heads=2):
        super().__init__()
        self.q_heads = nn.ModuleList([nn.Linear(D, D // heads) for _ in range(heads)])
        self.k_heads = nn.ModuleList([nn.Linear(D, D // heads) for _ in range(heads)])
        self.v_heads = nn.ModuleList([nn.Linear(D, D // heads) for _ in range(heads)])
        self.out = nn.Linear(D, D)


def test_plain_layers_map_as_before_without_rows():
    module = nn.Module()
    for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
        setattr(module, n, nn.Linear(D, D))
    options, why = W.candidates(ROLES, _layers(module), heads=(2,))
    assert why is None and len(options) == 1 and options[0].by_name and not options[0].rows


def test_stacked_layer_takes_the_roles_in_contract_order_first():
    options, why = W.candidates(ROLES, _layers(NanoGPT()), heads=(2,))
    assert why is None and 1 < len(options) <= W.MAX_FUSED
    first = options[0]
    assert first.layers == {"q_proj": "c_attn", "k_proj": "c_attn", "v_proj": "c_attn", "o_proj": "c_proj"}
    assert first.rows["q_proj"] == [("c_attn", tuple(range(0, D)))]
    assert first.rows["v_proj"] == [("c_attn", tuple(range(2 * D, 3 * D)))]
    assert ("stacked", "q_proj, k_proj, v_proj", "c_attn") in [(n.kind, n.role, n.layer) for n in first.notes]
    orders = [tuple(sorted(m.rows, key=lambda r: m.rows[r][0][1][0])) for m in options if m.notes[-1].kind == "stacked"]
    assert ("q_proj", "v_proj", "k_proj") in orders  # the other orders are tried too


def test_per_head_interleave_only_with_a_head_count():
    with_heads, _ = W.candidates(ROLES, _layers(NanoGPT()), heads=(2,))
    without, _ = W.candidates(ROLES, _layers(NanoGPT()), heads=())
    interleaved = [m for m in with_heads if any(n.kind == "stacked_heads" for n in m.notes)]
    assert interleaved and not any(any(n.kind == "stacked_heads" for n in m.notes) for m in without)
    m = next(m for m in interleaved if m.layers["o_proj"] == "c_proj" and "q_proj" in m.rows
             and m.rows["q_proj"][0][1][0] == 0 and m.rows["k_proj"][0][1][0] == D // 2)
    half = D // 2  # two heads of 4: rows [q_0; k_0; v_0; q_1; k_1; v_1]
    assert m.rows["q_proj"][0][1] == tuple(range(0, half)) + tuple(range(3 * half, 4 * half))
    assert m.rows["v_proj"][0][1] == tuple(range(2 * half, 3 * half)) + tuple(range(5 * half, 6 * half))


def test_a_layer_whose_name_spells_its_roles_is_tried_first():
    roles = ROLES[:1] + [W.Role(n, "linear", (D, 6), (D,)) for n in ("k_proj", "v_proj")] + ROLES[3:]
    module = nn.Module()
    module.to_q, module.to_kv, module.to_out = nn.Linear(D, D), nn.Linear(6, 2 * D), nn.Linear(D, D)
    options, _ = W.candidates(roles, _layers(module), heads=(2,))
    assert options[0].layers["k_proj"] == options[0].layers["v_proj"] == "to_kv"
    square = ROLES  # d_context == d_model: q_proj could share to_kv too, but the name says k and v
    module.to_kv = nn.Linear(D, 2 * D)
    options, _ = W.candidates(square, _layers(module), heads=(2,))
    assert set(options[0].rows) == {"k_proj", "v_proj"} and options[0].layers["q_proj"] == "to_q"


def test_split_role_over_per_head_layers_in_list_order():
    options, why = W.candidates(ROLES, _layers(PerHead()), heads=(2,))
    assert why is None
    first = options[0]
    assert first.rows["q_proj"] == [("q_heads.0", tuple(range(D // 2))), ("q_heads.1", tuple(range(D // 2)))]
    assert first.layers["k_proj"] == "k_heads.*" and first.layers["o_proj"] == "out"
    # the number of per-head layers must be a head count or divide one (ranks holding whole heads)
    none, why = W.candidates(ROLES, _layers(PerHead()), heads=(3,))
    assert none == [] and why.key == "contract.no_layer"
    ranks, why = W.candidates(ROLES, _layers(PerHead()), heads=(4,))
    assert why is None and ranks[0].rows["q_proj"] == first.rows["q_proj"]


def test_no_fused_fit_still_names_the_missing_layer():
    module = nn.Module()
    module.c_attn = nn.Linear(D, 3 * D)  # q, k, v but nothing for the fourth role
    options, why = W.candidates(ROLES, _layers(module), heads=(2,))
    assert options == [] and why.key == "contract.no_layer"


def test_load_fills_row_slices_and_gradients_slice_back():
    module = NanoGPT()
    options, _ = W.candidates(ROLES, _layers(module), heads=(2,))
    m = next(m for m in options if any(n.kind == "stacked_heads" for n in m.notes))
    weights = W.role_tensors(ROLES, 0, 0)
    W.load(module, m, weights)
    for role in ("q_proj", "k_proj", "v_proj"):
        rows = list(m.rows[role][0][1])
        assert torch.equal(module.c_attn.weight[rows], weights[role]["weight"])
        assert torch.equal(module.c_attn.bias[rows], weights[role]["bias"])
    leaves, covered = W.rows_leaves(module, m.rows, m.transposed)
    assert covered == {"c_attn.weight", "c_attn.bias"}
    assert leaves["k_proj.weight"].grad is None
    module.c_attn(torch.randn(3, D)).pow(2).sum().backward()
    rows = list(m.rows["k_proj"][0][1])
    assert torch.equal(leaves["k_proj.weight"].grad, module.c_attn.weight.grad[rows])
    assert torch.equal(leaves["v_proj.bias"].grad, module.c_attn.bias.grad[list(m.rows["v_proj"][0][1])])


NANOGPT = '''
# attnprep: mha
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.h = num_heads

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = K_LINE
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        att = att.masked_fill(~allowed, float("-inf")).softmax(-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
'''


def test_stacked_layer_gradients_are_graded_per_role(tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(NANOGPT.replace("K_LINE", "k"))
    # the same outputs, but no gradient reaches the key rows of c_attn
    bad.write_text(NANOGPT.replace("K_LINE", "k.detach()"))
    assert grade(good).passed
    result = grade(bad)
    check = next(c for c in result.checks if c.id == "gradients")
    assert check.passed is False and check.message.params.get("name") == "k_proj.weight", check


def test_one_heads_stages_are_a_layout_of_the_reference_stages():
    from attnprep.grader.judge import _shape_row

    assert _shape_row("scores", (3, 4, 7, 7), (3, 7, 7), heads=(4,)).equivalent  # a ModuleList of heads
    assert _shape_row("attn @ v", (3, 4, 7, 2), (3, 7, 2), heads=(4,)).equivalent
    assert not _shape_row("scores", (3, 4, 7, 7), (3, 7, 7)).equivalent  # no head count: not a head's part
    assert not _shape_row("scores", (3, 4, 7, 7), (3, 7, 4), heads=(4,)).equivalent  # no head of it
    # a loop over the batch, or over (batch, head), with 2-d slices (okfit14: a correct causal_attention
    # looping over itertools.product(range(B), range(H)) had every shape row marked wrong)
    assert _shape_row("scores", (3, 4, 7, 7), (4, 7, 7), heads=(4,)).equivalent  # one sample
    assert _shape_row("q", (3, 4, 7, 5), (7, 5), heads=(4,)).equivalent  # one sample's head
    assert _shape_row("q", (3, 4, 7, 5), (5, 7), heads=(4,)).equivalent  # k^T-like, transposed
    assert not _shape_row("q", (3, 4, 7, 5), (7, 5)).equivalent  # no head count: not a head's part
    assert not _shape_row("q", (3, 4, 7, 5), (7, 4), heads=(4,)).equivalent


def test_a_parametrized_weight_is_its_module_with_the_stored_original():
    """torch.nn.utils.parametrize (minLoRA's update on base.weight): the layer is the module, its
    weight the parametrization's stored original, its own bias beside it; the store itself is no
    layer (round 9's lora/ok_minlora_parametrize_weight failed with base.bias left unmapped)."""
    from torch.nn.utils import parametrize

    class Plus(nn.Module):
        def forward(self, X):
            return X + 1

    module = nn.Module()
    module.base = nn.Linear(D, D)
    parametrize.register_parametrization(module.base, "weight", Plus())
    layers = _layers(module)
    assert {l.name for l in layers} == {"base"}
    weight, bias, names = W.params_of(module, "base")
    assert weight is module.base.parametrizations.weight.original and bias is module.base.bias
    assert names == ["base.parametrizations.weight.original", "base.bias"]
    W.load(module, W.Mapping(layers={"base": "base"}, by_name=True), {"base": {"weight": torch.zeros(D, D), "bias": torch.ones(D)}})
    assert torch.equal(module.base.weight, torch.ones(D, D)) and torch.equal(module.base.bias, torch.ones(D))


def test_a_parameter_lists_vector_after_its_matrix_is_its_bias_and_may_still_be_a_gain():
    """nn.ParameterList([W_qkv, b_qkv, W_o, b_o]) used through F.linear: the entries are named by
    their index, so the vector right after a matrix (as long as one of its sides) is its bias; kept
    as a 1-d layer too, since a norm's gain may follow the matrix it normalises. Named pairs get
    their ``_bias`` / ``_b`` partner (a correct fused MHA kept in a ParameterList had its biases
    re-seeded beside a zero reference bias and failed every case)."""
    module = nn.Module()
    module.params = nn.ParameterList([nn.Parameter(torch.zeros(3 * D, D)), nn.Parameter(torch.zeros(3 * D)),
                                      nn.Parameter(torch.zeros(D, D)), nn.Parameter(torch.zeros(D))])
    layers = {(l.name, l.weight, l.bias, l.transposed) for l in _layers(module)}
    assert ("params.0", (3 * D, D), (3 * D,), False) in layers and ("params.2", (D, D), (D,), False) in layers
    assert ("params.1", (3 * D,), None, False) in layers  # the gain reading of the same vector
    weight, bias, names = W.params_of(module, "params.0")
    assert bias is module.params[1] and names == ["params.0", "params.1"]
    params = {"qkv": torch.zeros(3 * D, D), "qkv_bias": torch.zeros(3 * D), "g": torch.zeros(D)}
    assert W.bias_partner("qkv", params) == "qkv_bias"
    assert W.bias_partner("0", {"0": torch.zeros(D, D), "1": torch.zeros(D + 1)}) is None  # no side of it


def test_a_frozen_parameter_no_role_takes_keeps_its_values_and_a_trainable_one_is_seeded():
    """A constant kept as a frozen parameter (RoFormer's nn.Parameter(inv_freq, requires_grad=False))
    is no weight: loading leaves it as the constructor made it, where a trainable parameter no role
    takes is seeded (a correct decoder layer with its RoPE frequencies so kept failed 18 of 20 cases)."""
    module = nn.Module()
    module.q_proj = nn.Linear(D, D)
    module.inv_freq = nn.Parameter(torch.arange(4.0), requires_grad=False)
    module.spare = nn.Parameter(torch.zeros(3))
    W.load(module, W.Mapping(layers={"q_proj": "q_proj"}, by_name=True), {"q_proj": {"weight": torch.ones(D, D), "bias": torch.ones(D)}})
    assert torch.equal(module.inv_freq, torch.arange(4.0))
    assert not torch.equal(module.spare, torch.zeros(3))


def test_matrices_and_vectors_no_name_pairs_are_paired_by_the_order_they_were_made_in():
    """self.A, self.B, self.C, self.P and then self.a, self.b, self.c, self.p (a whiteboard's names):
    as many vectors as matrices, each as long as a side of its matrix, paired in order; the vectors
    stay 1-d layers too (a gain after its matrix). Keras' kernel / bias pair by name (a correct MHA
    so named was graded with zero biases against its own seeded ones and failed every case)."""
    module = nn.Module()
    for n in "ABCP":
        setattr(module, n, nn.Parameter(torch.zeros(D, D)))
    for n in "abcp":
        setattr(module, n, nn.Parameter(torch.zeros(D)))
    assert {n: W.bias_partner(n, dict(module.named_parameters())) for n in "ABCP"} == dict(zip("ABCP", "abcp"))
    layers = {(l.name, l.bias) for l in _layers(module)}
    assert ("A", (D,)) in layers and ("a", None) in layers
    assert W.bias_partner("q_kernel", {"q_kernel": torch.zeros(D, D), "q_bias": torch.zeros(D)}) == "q_bias"
    uneven = {"A": torch.zeros(D, D), "B": torch.zeros(D, D), "g": torch.zeros(D)}  # one vector, two matrices: no guess
    assert W.bias_partner("A", uneven) is None and W.bias_partner("B", uneven) is None


def test_a_gqa_layer_stacked_group_by_group_is_tried_per_kv_head():
    """Falcon-40B's query_key_value for GQA: per kv group, its query heads, then its key head, then
    its value head. With two kv heads and four query heads of 2: rows [q_0 q_1 k_0 v_0 q_2 q_3 k_1 v_1]
    (a correct Falcon-style GQA failed 48 of 64 cases: only one group per head was tried, for roles of
    one width)."""
    hd = 2
    roles = [W.Role("q_proj", "linear", (4 * hd, D), (4 * hd,)), W.Role("k_proj", "linear", (2 * hd, D), (2 * hd,)),
             W.Role("v_proj", "linear", (2 * hd, D), (2 * hd,)), W.Role("o_proj", "linear", (D, 4 * hd), (D,))]
    module = nn.Module()
    module.query_key_value = nn.Linear(D, 8 * hd)
    module.dense = nn.Linear(4 * hd, D)
    options, _ = W.candidates(roles, _layers(module), heads=(4, 2))
    q = tuple(range(0, 4)) + tuple(range(8, 12))
    k, v = tuple(range(4, 6)) + tuple(range(12, 14)), tuple(range(6, 8)) + tuple(range(14, 16))
    assert any(m.rows.get("q_proj") == [("query_key_value", q)] and m.rows.get("k_proj") == [("query_key_value", k)]
               and m.rows.get("v_proj") == [("query_key_value", v)] for m in options)


def test_one_vector_after_several_matrices_holds_their_biases_in_order():
    """nn.MultiheadAttention's layout when kdim != embed_dim: q_proj_weight, k_proj_weight,
    v_proj_weight, then one in_proj_bias of their first sides summed. Each matrix is a layer with
    its slice as bias; loading writes the slices, and the gradient of a role's bias is its rows of
    the vector's (a correct cross-attention so written failed every case, graded with zero biases)."""
    module = nn.Module()
    module.q_proj_weight = nn.Parameter(torch.zeros(D, D))
    module.k_proj_weight = nn.Parameter(torch.zeros(D, 6))
    module.v_proj_weight = nn.Parameter(torch.zeros(D, 6))
    module.in_proj_bias = nn.Parameter(torch.zeros(3 * D))
    layers = {(l.name, l.weight, l.bias) for l in _layers(module) if not l.transposed}
    assert ("k_proj_weight", (D, 6), (D,)) in layers and not any(l[0] == "in_proj_bias" for l in layers)
    weight, bias, names = W.params_of(module, "k_proj_weight")
    assert bias.shape == (D,) and names == ["k_proj_weight", "in_proj_bias"]
    W.load(module, W.Mapping(layers={"k_proj": "k_proj_weight"}, by_name=False),
           {"k_proj": {"weight": torch.ones(D, 6), "bias": torch.full((D,), 2.0)}})
    assert torch.equal(module.in_proj_bias[D:2 * D], torch.full((D,), 2.0))
    assert W.bias_rows(module, "v_proj_weight") == ("in_proj_bias", tuple(range(2 * D, 3 * D)))
    assert W.bias_rows(module, "in_proj_bias") is None


def test_a_vector_beside_a_bias_free_layer_named_for_it_is_its_bias():
    """BEiT / Swin-v2's habit: ``self.q_proj = nn.Linear(D, D, bias=False)`` and ``self.q_bias``
    (or ``q_proj_bias``) added after it. The vector is the layer's bias: mapped, loaded and no gain
    of its own (a correct MQA so written was graded with a zero bias and a seeded stray vector: 42
    of 48 outputs wrong). A vector named for a bare matrix stays that matrix's bias."""
    module = nn.Module()
    module.q_proj = nn.Linear(D, D, bias=False)
    module.q_bias = nn.Parameter(torch.zeros(D))
    module.k_proj = nn.Linear(D, D, bias=False)
    module.k_proj_bias = nn.Parameter(torch.zeros(D))
    module.v_weight = nn.Parameter(torch.zeros(D, D))
    module.v_bias = nn.Parameter(torch.zeros(D))
    module.v_proj = nn.Linear(D, D, bias=False)  # v_bias is v_weight's, by its name
    layers = {(l.name, l.weight, l.bias) for l in _layers(module) if not l.transposed}
    assert {("q_proj", (D, D), (D,)), ("k_proj", (D, D), (D,)), ("v_weight", (D, D), (D,)),
            ("v_proj", (D, D), None)} <= layers
    assert not any(l[0] in ("q_bias", "k_proj_bias", "v_bias") for l in layers)  # no gain layers of their own
    weight, bias, names = W.params_of(module, "q_proj")
    assert bias is module.q_bias and names == ["q_proj.weight", "q_bias"]
    W.load(module, W.Mapping(layers={"q_proj": "q_proj", "k_proj": "k_proj"}, by_name=True),
           {"q_proj": {"weight": torch.ones(D, D), "bias": torch.full((D,), 2.0)},
            "k_proj": {"weight": torch.ones(D, D), "bias": torch.full((D,), 3.0)}})
    assert torch.equal(module.q_bias, torch.full((D,), 2.0)) and torch.equal(module.k_proj_bias, torch.full((D,), 3.0))
    assert W.params_of(module, "v_proj")[1] is None


def test_a_bias_per_head_beside_a_bias_free_layer_is_its_bias_flattened():
    """``self.q_proj = nn.Linear(D, D, bias=False)`` with ``self.q_bias = nn.Parameter(torch.zeros(H,
    D // H))`` added after the head split (okfit18: a correct MHA so written was graded with zero
    biases and seeded strays, 48 of 48 outputs wrong). The (H, D // H) parameter is the layer's bias:
    settled as one vector, loaded, read in its own shape while the module runs; a 2-d parameter of
    another size beside a bias-free layer stays what it was."""
    H = 2

    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(D, D, bias=False)
            self.q_bias = nn.Parameter(torch.zeros(H, D // H))
            self.k_proj = nn.Linear(D, D, bias=False)
            self.k_bias = nn.Parameter(torch.zeros(H, D))  # twice the out-features: no bias of k_proj

        def forward(self, x):
            return self.q_proj(x).view(*x.shape[:-1], H, D // H) + self.q_bias

    module = Heads()
    W.settle(module, frozenset({(D, D)}))
    assert module.q_bias.shape == (D,) and module.k_bias.shape == (H, D)
    layers = {(l.name, l.weight, l.bias) for l in _layers(module) if not l.transposed}
    assert ("q_proj", (D, D), (D,)) in layers and ("k_proj", (D, D), None) in layers
    W.load(module, W.Mapping(layers={"q_proj": "q_proj"}, by_name=True),
           {"q_proj": {"weight": torch.eye(D), "bias": torch.arange(D, dtype=torch.float32)}})
    out = module(torch.zeros(1, D))
    assert out.shape == (1, H, D // H) and torch.equal(out.flatten(), torch.arange(D, dtype=torch.float32))
    assert "q_bias" not in module.__dict__  # the view is dropped after the call


def test_a_stack_of_one_matrix_per_expert_maps_index_by_index():
    """Hugging Face transformers v5 keeps a MoE's experts stacked: ``gate_up_proj = (E, 2F, D)``,
    ``down_proj = (E, D, F)``, read as ``self.gate_up_proj[e]`` (okfit18: a correct MoE so written was
    a contract failure, no layer of (F, D)). A 3-d parameter whose first dim is a repeat count and
    that no reading makes a contract matrix is a ParameterList of its matrices under its own name,
    read as their stack while the module runs; a Flax kernel whose reading is a contract matrix, or a
    stack of another count, stays as it was."""
    E, F_, Dm = 3, 6, 4

    class Experts(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_up_proj = nn.Parameter(torch.zeros(E, 2 * F_, Dm))
            self.down_proj = nn.Parameter(torch.zeros(E, Dm, F_))
            self.kernel = nn.Parameter(torch.zeros(E, Dm, 2))  # (E, Dm·2) is a contract shape below
            self.other = nn.Parameter(torch.zeros(5, F_, Dm))  # 5 is no repeat count

        def forward(self, x, e):
            return torch.nn.functional.linear(x, self.gate_up_proj[e]), self.down_proj.shape

    module = Experts()
    W.settle(module, frozenset({(F_, Dm), (Dm, F_), (E, 2 * Dm)}), frozenset({E}))
    assert isinstance(module.gate_up_proj, nn.ParameterList) and len(module.gate_up_proj) == E
    assert isinstance(module.down_proj, nn.ParameterList) and module.down_proj[0].shape == (Dm, F_)
    assert isinstance(module.kernel, nn.Parameter) and isinstance(module.other, nn.Parameter)
    names = {l.name for l in _layers(module) if not l.transposed}
    assert {f"gate_up_proj.{i}" for i in range(E)} <= names and {f"down_proj.{i}" for i in range(E)} <= names
    with torch.no_grad():
        module.gate_up_proj[1].copy_(torch.ones(2 * F_, Dm))
    out, shape = module(torch.ones(1, Dm), 1)
    assert torch.equal(out, torch.full((1, 2 * F_), float(Dm))) and shape == (E, Dm, F_)
    out.sum().backward()
    assert module.gate_up_proj[1].grad is not None and module.gate_up_proj[0].grad.abs().sum() == 0
    assert "gate_up_proj" not in module.__dict__  # the stack is dropped after the call


def test_a_gain_kept_broadcast_ready_is_a_vector():
    """A norm's gain kept as ``nn.Parameter(torch.ones(1, 1, D))`` (okfit18: a correct decoder layer so
    written was a contract failure, no layer of (D,)) is the ``(D,)`` vector: settled 1-d, mapped as a
    gain, read in its own shape while the module runs. So is a (1, D) one, unless a contract matrix
    has that shape."""

    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(1, 1, D))
            self.row = nn.Parameter(torch.ones(1, D))

        def forward(self, x):
            return x * self.weight

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = Norm()

        def forward(self, x):
            return self.norm(x)

    module = Block()
    W.settle(module, frozenset({(D, D), (1, D)}))  # a contract matrix of one row: (1, D) stays one
    assert module.norm.weight.shape == (D,) and module.norm.row.shape == (1, D)
    other = Block()
    W.settle(other, frozenset({(D, D)}))  # no such matrix: a (1, D) is a gain too
    assert other.norm.row.shape == (D,)
    assert ("norm", (D,), None) in {(l.name, l.weight, l.bias) for l in _layers(module)}
    with torch.no_grad():
        module.norm.weight.copy_(torch.arange(D, dtype=torch.float32))
    out = module(torch.ones(2, 3, D))
    assert torch.equal(out, torch.arange(D, dtype=torch.float32).expand(2, 3, D))
    assert "weight" not in module.norm.__dict__  # the view is dropped after the call


def test_a_module_built_in_bfloat16_is_graded_with_float32_weights(tmp_path):
    """Projections made with ``nn.Linear(..., dtype=torch.bfloat16)`` and cast to the input's dtype at
    use (okfit18: a correct MHA so written had the grader's weights rounded to bfloat16 while the
    reference kept them whole, 48 of 48 outputs off). Its low-precision parameters are held in
    float32, the same Parameter objects; float64 ones and buffers stay as they are."""
    module = nn.Module()
    module.lin = nn.Linear(D, D, dtype=torch.bfloat16)
    module.half_gain = nn.Parameter(torch.ones(D, dtype=torch.float16))
    module.wide = nn.Parameter(torch.ones(D, dtype=torch.float64))
    module.register_buffer("table", torch.ones(D, dtype=torch.bfloat16))
    weight = module.lin.weight
    W.upcast(module)
    assert module.lin.weight is weight and weight.dtype == torch.float32 and module.lin.bias.dtype == torch.float32
    assert module.half_gain.dtype == torch.float32 and module.wide.dtype == torch.float64
    assert module.table.dtype == torch.bfloat16
    source = (Path(__file__).parent / "corpus" / "mha" / "ok_bf16_weights_cast_to_input.py").read_text(encoding="utf-8")
    attempt = tmp_path / "mha.py"
    attempt.write_text(source, encoding="utf-8")
    assert grade(attempt, protect=()).passed


@pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated:FutureWarning")  # the learner's style
def test_a_weight_normalised_layer_is_one_plain_weight_the_grader_loads():
    """weight_norm stores g and v and computes w = g · v / ‖v‖ (the parametrization's original0 /
    original1, or the older hook's weight_g / weight_v): no stored tensor has the layer's shape, so a
    correct attempt failed the contract. ``settle`` makes w a plain parameter at its current value,
    the layer computes the same, and the grader's weight goes into it; a one-tensor parametrization
    (minLoRA's) keeps its original as the layer's weight."""
    from torch.nn.utils import parametrize, weight_norm
    from torch.nn.utils.parametrizations import weight_norm as weight_norm_p

    module = nn.Module()
    module.q_proj = weight_norm_p(nn.Linear(D, D))
    module.k_proj = weight_norm(nn.Linear(D, D))
    module.v_proj = nn.Linear(D, D)
    module.delta = nn.Parameter(torch.randn(D, D))
    parametrize.register_parametrization(module.v_proj, "weight", _PlusOther(module))  # minLoRA's shape
    x = torch.randn(3, D)
    before = (module.q_proj(x), module.k_proj(x))
    assert not any(l.name in ("q_proj", "k_proj") for l in _layers(module))
    W.settle(module)
    assert torch.allclose(module.q_proj(x), before[0]) and torch.allclose(module.k_proj(x), before[1])
    assert {("q_proj", (D, D), (D,)), ("k_proj", (D, D), (D,))} <= {(l.name, l.weight, l.bias) for l in _layers(module)}
    assert W.params_of(module, "v_proj")[2][0] == "v_proj.parametrizations.weight.original"  # stays
    W.load(module, W.Mapping(layers={"q_proj": "q_proj", "k_proj": "k_proj"}, by_name=True),
           {r: {"weight": torch.eye(D), "bias": torch.zeros(D)} for r in ("q_proj", "k_proj")})
    assert torch.allclose(module.q_proj(x), x) and torch.allclose(module.k_proj(x), x)
    module.q_proj(x).sum().backward()
    assert module.q_proj.weight.grad is not None


def test_a_lazy_layer_is_made_by_one_call_before_mapping(graded):
    """nn.LazyLinear has no shape until its first call: the build calls the module once on the first
    case (no gradients) before mapping, as its first forward would (okfit14: a correct MHA of
    LazyLinear layers was an error at construction, the mapping reading uninitialised shapes)."""
    from pathlib import Path

    result = graded(Path(__file__).parent / "corpus" / "mha" / "ok_lazy_linear.py")
    assert result.verdict.value == "passed", (result.checks, result.error)
    assert result.mapping == {r: r for r in ("q_proj", "k_proj", "v_proj", "o_proj")}


def test_matrices_in_more_than_two_dims_are_layers_read_in_their_own_shape():
    """A kernel-1 Conv1d's (out, in, 1) weight and a (k, out, in) stack with its (k, out) bias by name
    are registered as the 2-d (1-d) parameters they are, so they map as a layer and as a fused layer's
    rows; while the module runs, each part reads them in its own shape (a view made by a forward
    pre-hook and dropped after the call), also in a deep copy cast to another dtype (okfit14: a
    (3, d, d) q/k/v stack, Conv1d(d, d, 1) projections and SwiGLU's (2, d_ff, d) gate/up failed the
    contract)."""
    import copy

    class Stacked(nn.Module):
        def __init__(self):
            super().__init__()
            self.W_qkv = nn.Parameter(torch.randn(3, D, D))
            self.b_qkv = nn.Parameter(torch.randn(3, D))
            self.conv = nn.Conv1d(D, D, 1)

        def forward(self, x):
            qkv = torch.einsum("bc,soc->sbo", x, self.W_qkv) + self.b_qkv[:, None, :]
            return self.conv(qkv.sum(0)[:, :, None])[..., 0]

    module = Stacked()
    x = torch.randn(2, D)
    before = module(x)
    W.settle(module)
    assert torch.allclose(module(x), before, atol=1e-6)
    shapes = {n: tuple(p.shape) for n, p in module.named_parameters()}
    assert shapes == {"W_qkv": (3 * D, D), "b_qkv": (3 * D,), "conv.weight": (D, D), "conv.bias": (D,)}
    assert ("W_qkv", (3 * D, D), (3 * D,)) in {(l.name, l.weight, l.bias) for l in _layers(module)}
    assert module.W_qkv.shape == (3 * D, D)  # outside a call: the registered parameter
    module(x).sum().backward()
    assert module.W_qkv.grad.shape == (3 * D, D) and module.conv.weight.grad.shape == (D, D)
    half = copy.deepcopy(module).to(torch.float64)
    assert torch.allclose(half(x.double()), before.double(), atol=1e-5)


class _Transpose(nn.Module):
    def forward(self, w):
        return w.t()

    def right_inverse(self, w):
        return w.t()


class _PlusOther(nn.Module):
    """minLoRA's shape: the parametrized weight reads another parameter of the module."""
    def __init__(self, owner):
        super().__init__()
        self._owner = [owner]

    def forward(self, w):
        return w + self._owner[0].delta


@pytest.mark.filterwarnings("ignore:`torch.nn.utils.spectral_norm` is deprecated:FutureWarning")  # the learner's style
def test_a_parametrization_of_its_original_alone_is_one_plain_weight():
    """A parametrization that computes the weight from its original alone (spectral_norm's w / σ, both
    APIs; a Transpose of an (in, out) original) is settled into the plain weight it computes: the layer
    computes the same, maps by its computed shape and the grader's weight goes in as it is (okfit17:
    an MHA of spectral-normed projections, one of Transpose-parametrized ones and a SwiGLU with the
    older spectral_norm hook were wrong_output, the grader's weight loaded into the original). One that
    reads another parameter (minLoRA's + B·A, here + delta, frozen or not) keeps its original as the
    layer's weight."""
    from torch.nn.utils import parametrize, spectral_norm
    from torch.nn.utils.parametrizations import spectral_norm as spectral_norm_p

    module = nn.Module()
    module.q_proj = spectral_norm_p(nn.Linear(D, D))
    module.k_proj = spectral_norm(nn.Linear(D, D))
    module.v_proj = nn.Linear(D, 2 * D)
    parametrize.register_parametrization(module.v_proj, "weight", _Transpose())  # stores weight.t()
    module.delta = nn.Parameter(torch.randn(D, D), requires_grad=False)
    module.o_proj = nn.Linear(D, D)
    parametrize.register_parametrization(module.o_proj, "weight", _PlusOther(module))
    module.eval()
    x = torch.randn(3, D)
    with torch.no_grad():
        before = (module.q_proj(x), module.k_proj(x))
    assert ("v_proj", (D, 2 * D)) in {(l.name, l.weight) for l in _layers(module) if not l.transposed}  # its (in, out) original
    W.settle(module)
    assert not parametrize.is_parametrized(module.q_proj) and not parametrize.is_parametrized(module.v_proj)
    assert torch.allclose(module.q_proj(x), before[0], atol=1e-6) and torch.allclose(module.k_proj(x), before[1], atol=1e-6)
    assert module.v_proj.weight.shape == (2 * D, D)  # what it computes: the (out, in) weight
    assert ("v_proj", (2 * D, D), (2 * D,)) in {(l.name, l.weight, l.bias) for l in _layers(module)}
    assert W.params_of(module, "o_proj")[2][0] == "o_proj.parametrizations.weight.original"  # stays
    assert not module.delta.requires_grad  # put back as it was after the look
    W.load(module, W.Mapping(layers={"q_proj": "q_proj", "k_proj": "k_proj"}, by_name=True),
           {r: {"weight": torch.eye(D), "bias": torch.zeros(D)} for r in ("q_proj", "k_proj")})
    assert torch.allclose(module.q_proj(x), x) and torch.allclose(module.k_proj(x), x)
    module.q_proj(x).sum().backward()
    assert module.q_proj.weight.grad is not None


def test_per_head_matrices_of_a_parameter_list_take_their_bias_from_the_sibling_list():
    """d2l's per-head weights as ``nn.ParameterList``s: entry i of ``wq`` (head_dim, d_model) has its bias
    at entry i of the sibling list ``bq`` (paired by name as a bare wq / bq is), in either layout; it is
    the layer's bias in the mapping and in loading, and is no stray gain (okfit17: such an MHA was
    wrong_output, the biases left at the grader's seeded values and not copied into the reference).
    A list without such a sibling, or with vectors of another length, has none."""
    module = nn.Module()
    module.wq = nn.ParameterList([nn.Parameter(torch.randn(D // 2, D)) for _ in range(2)])
    module.bq = nn.ParameterList([nn.Parameter(torch.randn(D // 2)) for _ in range(2)])
    module.W_k = nn.ParameterList([nn.Parameter(torch.randn(D, D // 2)) for _ in range(2)])  # (in, out)
    module.b_k = nn.ParameterList([nn.Parameter(torch.randn(D // 2)) for _ in range(2)])
    module.wv = nn.ParameterList([nn.Parameter(torch.randn(D // 2, D)) for _ in range(2)])
    module.bv = nn.ParameterList([nn.Parameter(torch.randn(3)) for _ in range(2)])  # no side of wv's
    layers, stray = W.layers_of(module)
    found = {(l.name, l.weight, l.bias) for l in layers}
    assert {("wq.1", (D // 2, D), (D // 2,)), ("W_k.0", (D // 2, D), (D // 2,))} <= found
    assert ("wv.0", (D // 2, D), None) in found
    assert not any(name.startswith(("bq.", "b_k.")) for name in stray) and "bv.0" in stray
    weight, bias, names = W.params_of(module, "wq.1")
    assert weight is module.wq[1] and bias is module.bq[1] and names == ["wq.1", "bq.1"]
    assert W.params_of(module, "W_k.0")[1] is module.b_k[0]
    assert W.params_of(module, "wv.0")[1] is None


def test_a_three_dim_kernel_is_read_as_the_contract_matrix_one_reading_gives():
    """A 3-d kernel is registered as the 2-d matrix of a contract weight's shape where one reading of it
    gives one: a Flax DenseGeneral kernel (d_model, H, D) as (d_model, H·D), its (H, D) bias as (H·D,);
    Gemma's JAX (H, d_model, D) as (H·D, d_model), dims swapped before flattening and swapped back for
    the module; an (H, D, d_model) output kernel as (H·D, d_model); with one head (D = d_model) the
    (1, D) bias still pairs. Without a matching shape a (3, d, d) stack keeps its fused-rows reading
    (okfit17: a Flax-port MHA, a Flax-port GQA and a Gemma-JAX MHA failed the contract)."""
    H, Dh = 2, D // 2

    class Ported(nn.Module):
        def __init__(self, heads, head_dim):
            super().__init__()
            self.query_kernel = nn.Parameter(torch.randn(D, heads, head_dim))
            self.query_bias = nn.Parameter(torch.randn(heads, head_dim))
            self.k_einsum = nn.Parameter(torch.randn(heads, D, head_dim))
            self.out_kernel = nn.Parameter(torch.randn(heads, head_dim, D))

        def forward(self, x):
            q = torch.einsum("btc,chd->bthd", x, self.query_kernel) + self.query_bias
            k = torch.einsum("btc,hcd->bthd", x, self.k_einsum)
            return torch.einsum("bthd,hdc->btc", q * k, self.out_kernel)

    for heads, head_dim in ((H, Dh), (1, D)):
        module = Ported(heads, head_dim)
        x = torch.randn(2, 3, D)
        before = module(x)
        W.settle(module, frozenset({(D, D)}))
        assert {n: tuple(p.shape) for n, p in module.named_parameters()} == {
            "query_kernel": (D, D), "query_bias": (D,), "k_einsum": (D, D), "out_kernel": (D, D)}
        assert torch.allclose(module(x), before, atol=1e-5)
        assert ("query_kernel", (D, D), (D,)) in {(l.name, l.weight, l.bias) for l in _layers(module)}
        module(x).sum().backward()
        assert module.k_einsum.grad.shape == (D, D)
    # the Gemma reading: row h·Dh + d, column c is the kernel's [h, c, d]
    module = Ported(H, Dh)
    kernel = module.k_einsum.detach().clone()
    W.settle(module, frozenset({(D, D)}))
    assert torch.equal(module.k_einsum.detach().view(H, Dh, D), kernel.transpose(1, 2))
    stack = nn.Module()
    stack.W_qkv = nn.Parameter(torch.randn(3, D, D))
    W.settle(stack, frozenset({(D, D)}))
    assert stack.W_qkv.shape == (3 * D, D)


def test_a_role_held_in_two_parts_head_by_head_loads_each_heads_rows_into_its_part():
    """The paper's notation of MLA keeps wkv_b (c -> H·(nope + dv)) as W_UK (c -> H·nope) and W_UV (c ->
    H·dv): a candidate maps the role to the two layers, each head's rows of the role being its rows of
    the first layer, then of the second; loading writes them there and the role's gradient is read back
    in the same order (okfit17: such an MLA and an MLA decode with (H, nope, c) / (H, dv, c) parameters
    failed the contract). After the per-head reading comes the two blocks one after the other (the
    paper's W_DKV and W_KR make wkv_a so); entries of per-head lists are not such parts
    (test_split_role_over_per_head_layers_in_list_order)."""
    H, nope, dv, c = 2, 3, 5, 4
    roles = [W.Role("wkv_b", "linear", (H * (nope + dv), c), None)]
    module = nn.Module()
    module.w_uk = nn.Linear(c, H * nope, bias=False)
    module.w_uv = nn.Linear(c, H * dv, bias=False)
    options, why = W.candidates(roles, _layers(module), (H,))
    parted = [m for m in options if m.rows and [n for n, _ in m.rows["wkv_b"]][:2] == ["w_uk", "w_uv"]]
    assert parted and why is None
    first = parted[0]
    assert [(n, len(i)) for n, i in first.rows["wkv_b"]] == [("w_uk", nope), ("w_uv", dv)] * H
    weight = torch.randn(H * (nope + dv), c)
    W.load(module, first, {"wkv_b": {"weight": weight}})
    per_head = weight.view(H, nope + dv, c)
    assert torch.equal(module.w_uk.weight.detach(), per_head[:, :nope].reshape(H * nope, c))
    assert torch.equal(module.w_uv.weight.detach(), per_head[:, nope:].reshape(H * dv, c))
    leaves, covered = W.rows_leaves(module, first.rows, set())
    (module.w_uk(torch.ones(1, c)).sum() + 2 * module.w_uv(torch.ones(1, c)).sum()).backward()
    grad = leaves["wkv_b.weight"].grad.view(H, nope + dv, c)
    assert torch.equal(grad[:, :nope], torch.ones(H, nope, c)) and torch.equal(grad[:, nope:], 2 * torch.ones(H, dv, c))
    assert covered == {"w_uk.weight", "w_uv.weight"}
    assert [len(i) for _, i in parted[-1].rows["wkv_b"]] == [H * nope, H * dv]  # the blocks, after per head
    one, _ = W.candidates([W.Role("wkv_b", "linear", (nope + dv, c), None)], _layers(_two(nope, dv, c)), ())
    assert [[(n, len(i)) for n, i in m.rows["wkv_b"]] for m in one] == [[("w_uk", nope), ("w_uv", dv)], [("w_uv", dv), ("w_uk", nope)]]


def _two(nope, dv, c):
    module = nn.Module()
    module.w_uk = nn.Linear(c, nope, bias=False)
    module.w_uv = nn.Linear(c, dv, bias=False)
    return module


def test_a_pruned_layer_is_one_plain_weight_the_grader_loads():
    """``torch.nn.utils.prune`` keeps ``weight_orig`` (the parameter) and ``weight_mask`` (a buffer),
    and a forward pre-hook writes ``weight = weight_orig · weight_mask`` before each call (okfit19: an
    MHA with ``prune.identity`` on its projections was wrong_output, 48 of 48, the grader's weight
    loaded as a bare matrix the layer never reads as it is). ``settle`` makes the weight it computes a
    plain parameter, with a mask of ones (identity) or a real pruning mask alike; the grader's weight
    then goes in as it is and its gradient is the layer's."""
    from torch.nn.utils import prune

    module = nn.Module()
    module.q_proj = nn.Linear(D, D)
    module.k_proj = nn.Linear(D, D)
    prune.identity(module.q_proj, "weight")
    prune.l1_unstructured(module.k_proj, "weight", amount=0.5)
    x = torch.randn(3, D)
    with torch.no_grad():
        before = (module.q_proj(x), module.k_proj(x))
    assert "q_proj.weight_orig" in dict(module.named_parameters())
    W.settle(module)
    assert {n for n, _ in module.named_parameters()} == {"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias"}
    assert not dict(module.named_buffers())  # the masks are gone with their hooks
    with torch.no_grad():
        assert torch.allclose(module.q_proj(x), before[0]) and torch.allclose(module.k_proj(x), before[1])
    assert {("q_proj", (D, D), (D,)), ("k_proj", (D, D), (D,))} <= {(l.name, l.weight, l.bias) for l in _layers(module)}
    W.load(module, W.Mapping(layers={"q_proj": "q_proj", "k_proj": "k_proj"}, by_name=True),
           {r: {"weight": torch.eye(D), "bias": torch.zeros(D)} for r in ("q_proj", "k_proj")})
    assert torch.allclose(module.q_proj(x), x) and torch.allclose(module.k_proj(x), x)  # no mask left on k
    module.k_proj(x).sum().backward()
    assert module.k_proj.weight.grad is not None


def test_a_row_stack_of_one_matrix_per_expert_maps_index_by_index():
    """DBRX keeps its experts one under the other in 2-d parameters: ``w1 = (E·F, D)``, read as
    ``self.w1.view(E, F, D)[e]`` (okfit19: a correct MoE so written was a contract failure, no layer
    of (F, D)). A 2-d parameter of k·r rows, k a repeat count and ``(r, c)`` a contract shape in either
    orientation while ``(k·r, c)`` is none, is a ParameterList of its k matrices, read as their rows
    again while the module runs; a contract-shaped matrix (the router's ``(E, D)``) stays as it is."""
    E, F_, Dm = 3, 6, 4

    class Experts(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Parameter(torch.zeros(E * F_, Dm))
            self.w2 = nn.Parameter(torch.zeros(E * F_, Dm))  # used as x @ w2[e]: (F, D) is (D, F) transposed
            self.router = nn.Parameter(torch.zeros(E, Dm))
            self.odd = nn.Parameter(torch.zeros(E * 5, Dm))  # (5, D) is no contract shape

        def forward(self, x, e):
            h = x @ self.w1.view(E, F_, Dm)[e].t()
            return h @ self.w2.view(E, F_, Dm)[e]

    module = Experts()
    W.settle(module, frozenset({(F_, Dm), (Dm, F_), (E, Dm)}), frozenset({E}))
    assert isinstance(module.w1, nn.ParameterList) and len(module.w1) == E and module.w1[0].shape == (F_, Dm)
    assert isinstance(module.w2, nn.ParameterList) and module.w2[2].shape == (F_, Dm)
    assert isinstance(module.router, nn.Parameter) and isinstance(module.odd, nn.Parameter)
    layers = {(l.name, l.weight, l.transposed) for l in _layers(module)}
    assert {(f"w1.{i}", (F_, Dm), False) for i in range(E)} <= layers
    assert {(f"w2.{i}", (Dm, F_), True) for i in range(E)} <= layers
    with torch.no_grad():
        module.w1[1].copy_(torch.ones(F_, Dm))
        module.w2[1].copy_(torch.ones(F_, Dm))
    out = module(torch.ones(1, Dm), 1)
    assert torch.equal(out, torch.full((1, Dm), float(Dm * F_)))
    out.sum().backward()
    assert module.w1[1].grad is not None and module.w1[0].grad.abs().sum() == 0
    assert "w1" not in module.__dict__  # the rows are dropped after the call


def test_a_stacked_layer_leaving_a_layer_named_for_a_role_is_tried_first():
    """GPT-2's cross-attention keeps ``q_attn`` (queries) beside ``c_attn``, one ``(in, out)`` Conv1D
    stacking keys and values. With d_context = d_model every stacked reading of ``c_attn`` fits, and the
    pieces' names agree equally (none): [q; k] and its variants came first and filled the candidates,
    [k; v] was never tried (okfit19: wrong_output, 8 of 35). A combination whose rest leaves a layer
    named for a role it leaves comes first."""
    class Conv1D(nn.Module):
        def __init__(self, nf, nx):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(nx, nf))
            self.bias = nn.Parameter(torch.zeros(nf))

    module = nn.Module()
    module.q_attn = Conv1D(D, D)
    module.c_attn = Conv1D(2 * D, D)
    module.c_proj = Conv1D(D, D)
    options, _ = W.candidates(ROLES, _layers(module), (2,))
    first = options[0]
    assert first.layers["q_proj"] == "q_attn" and first.layers["o_proj"] == "c_proj"
    assert first.layers["k_proj"] == first.layers["v_proj"] == "c_attn"
    assert first.rows["k_proj"] == [("c_attn", tuple(range(D)))] and first.rows["v_proj"] == [("c_attn", tuple(range(D, 2 * D)))]


def test_a_four_dim_qkv_kernel_is_read_as_the_fused_contract_matrix():
    """Gemma's JAX layout keeps q, k and v in one ``qkv_einsum`` kernel ``(3, H, d_model, D)``, applied
    with ``einsum("btc,shcd->sbthd")`` (okfit19: a correct fused MHA so written was a contract failure,
    no layer of (3·d_model, d_model)). Read with its last two dims swapped it is the ``(3·H·D, d_model)``
    matrix, rows [q heads; k heads; v heads]; a ``(3, H, D)`` bias paired by name is its vector; a 4-d
    parameter no reading makes a contract matrix stays as it is."""
    H, Dh = 2, D // 2

    class Gemma(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv_bias = nn.Parameter(torch.zeros(3, H, Dh))  # made first: read as the kernel's all the same
            self.qkv_kernel = nn.Parameter(torch.zeros(3, H, D, Dh))
            self.other = nn.Parameter(torch.zeros(2, 3, 5, 7))

        def forward(self, x):
            return torch.einsum("btc,shcd->sbthd", x, self.qkv_kernel) + self.qkv_bias[:, None, None]

    module = Gemma()
    W.settle(module, frozenset({(3 * D, D), (D, D)}))
    assert module.qkv_kernel.shape == (3 * D, D) and module.qkv_bias.shape == (3 * D,)
    assert module.other.shape == (2, 3, 5, 7)
    assert ("qkv_kernel", (3 * D, D), (3 * D,)) in {(l.name, l.weight, l.bias) for l in _layers(module)}
    with torch.no_grad():  # row r of the matrix: role r // D, head (r % D) // Dh, dim r % Dh
        module.qkv_kernel.copy_(torch.arange(3 * D, dtype=torch.float32)[:, None].expand(3 * D, D))
        module.qkv_bias.fill_(1.0)
    out = module(torch.ones(1, 1, D))  # (3, 1, 1, H, Dh)
    expected = (torch.arange(3 * D, dtype=torch.float32) * D + 1).view(3, 1, 1, H, Dh)
    assert torch.equal(out, expected)
    out.sum().backward()
    assert module.qkv_kernel.grad.shape == (3 * D, D)


def test_a_four_dim_stack_of_kernels_over_the_contracts_in_features_is_a_fused_layer():
    """Gemma's JAX GQA keeps k and v in one ``kv_einsum`` ``(2, KV, d_model, D)`` (okfit19: a correct GQA
    so written was a contract failure, no layer of (KV·D, d_model)). No reading of it is a contract
    matrix, but its third dim is the contract's in-features: it is the ``(2·KV·D, d_model)`` rows of a
    fused layer, k's heads then v's, which the stacked candidates then split; a 4-d parameter whose
    dims hold no contract in-features stays as it is."""
    KV, Dh = 1, 2
    module = nn.Module()
    module.kv_einsum = nn.Parameter(torch.arange(2 * KV * D * Dh, dtype=torch.float32).view(2, KV, D, Dh))
    module.other = nn.Parameter(torch.zeros(2, 3, 5, 7))
    before = module.kv_einsum.detach().clone()
    W.settle(module, frozenset({(D, D), (KV * Dh, D)}))
    assert module.kv_einsum.shape == (2 * KV * Dh, D) and module.other.shape == (2, 3, 5, 7)
    assert torch.equal(module.kv_einsum.detach(), before.transpose(2, 3).reshape(2 * KV * Dh, D))
    roles = [W.Role(n, "linear", s, None) for n, s in (("q_proj", (D, D)), ("k_proj", (KV * Dh, D)), ("v_proj", (KV * Dh, D)))]
    module.q_einsum = nn.Linear(D, D, bias=False)
    options, _ = W.candidates(roles, _layers(module), (KV,))
    assert any(m.layers["k_proj"] == m.layers["v_proj"] == "kv_einsum"
               and m.rows["k_proj"] == [("kv_einsum", tuple(range(KV * Dh)))] for m in options)


def test_a_module_that_overrides_call_still_reads_its_settled_parameters_in_their_own_shape():
    """The views of settled parameters are made by forward hooks of the module, which a class that
    overrides ``__call__`` (MLX's habit: no ``forward``) never runs (okfit19: an MLX-port MoE with 3-d
    expert stacks raised on a ParameterList, a fused MHA with a ``(3, d, d)`` stack on an einsum of
    two dims). Its class becomes a subclass of the same name that makes and drops them around its own
    ``__call__``; a deep copy keeps doing so."""
    import copy

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.W = nn.Parameter(torch.zeros(3, D, D))

        def __call__(self, x):
            return torch.einsum("bc,soc->sbo", x, self.W)

    module = Stack()
    W.settle(module, frozenset({(3 * D, D)}))
    assert module.W.shape == (3 * D, D) and type(module).__name__ == "Stack" and isinstance(module, Stack)
    with torch.no_grad():
        module.W.copy_(torch.ones(3 * D, D))
    for m in (module, copy.deepcopy(module)):
        assert torch.equal(m(torch.ones(2, D)), torch.full((3, 2, D), float(D)))
        assert "W" not in m.__dict__  # dropped after the call


def test_a_flax_fused_kernel_in_four_dims_is_the_in_out_fused_matrix_with_its_bias():
    """A Flax ``DenseGeneral(features=(3, H, D))`` keeps ``kernel (d_model, 3, H, D)`` and ``bias (3, H,
    D)`` (okfit19: a correct fused MHA so written was a contract failure). Read whole it is the ``(in,
    out)`` matrix ``(d_model, 3·H·D)``, and the bias its ``(3·H·D,)`` vector."""
    H, Dh = 2, D // 2
    dense = nn.Module()
    dense.kernel = nn.Parameter(torch.randn(D, 3, H, Dh))
    dense.bias = nn.Parameter(torch.randn(3, H, Dh))
    module = nn.Module()
    module.qkv = dense
    kernel, bias = dense.kernel.detach().clone(), dense.bias.detach().clone()
    W.settle(module, frozenset({(3 * D, D), (D, D)}))
    assert dense.kernel.shape == (D, 3 * D) and dense.bias.shape == (3 * D,)
    assert torch.equal(dense.kernel.detach(), kernel.reshape(D, 3 * D)) and torch.equal(dense.bias.detach(), bias.flatten())
    assert ("qkv.kernel", (3 * D, D), (3 * D,), True) in {(l.name, l.weight, l.bias, l.transposed) for l in _layers(module)}


def test_a_flax_kernel_over_the_context_in_four_dims_is_named_by_its_module():
    """A Flax cross-attention keeps keys and values in one ``DenseGeneral(features=(2, H, D))`` over the
    context: ``key_value.kernel (d_context, 2, H, D)`` (okfit19: a contract failure, then, once read as
    the ``(in, out)`` matrix ``(d_context, 2·H·D)``, wrong_output where d_context = d_model: every
    stacked reading fits and ``kernel`` names no role). A bare kernel is named by its module: the
    layer that spells k and v takes them, ``query`` takes q."""
    H, Dh = 2, D // 2
    module = nn.Module()
    for name, shape in (("query", (D, H, Dh)), ("key_value", (D, 2, H, Dh)), ("out", (H, Dh, D))):
        sub = nn.Module()
        sub.kernel = nn.Parameter(torch.zeros(shape))
        setattr(module, name, sub)
    W.settle(module, frozenset({(D, D)}))
    assert module.key_value.kernel.shape == (D, 2 * D)
    options, _ = W.candidates(ROLES, _layers(module), (H,))
    first = options[0]
    assert first.layers == {"q_proj": "query.kernel", "k_proj": "key_value.kernel", "v_proj": "key_value.kernel", "o_proj": "out.kernel"}
    assert first.rows["k_proj"] == [("key_value.kernel", tuple(range(D)))]


def test_a_stack_of_in_out_matrices_of_a_shape_two_roles_have_is_read_transposed():
    """Gemma's JAX FFN keeps gate and up as ``gating_einsum (2, d_model, d_ff)``, two ``(in, out)``
    matrices (okfit19: a correct SwiGLU so written was a contract failure: read as ``(2·d_model, d_ff)``
    rows, no layer of (d_ff, d_model)). When ``(d_ff, d_model)`` is the shape of two roles and
    ``(d_model, d_ff)`` of at most one, the stack is the ``(2·d_ff, d_model)`` rows of a fused layer,
    read with its last two dims swapped; without that knowledge it reads as before."""
    Dm, F_ = 4, 6
    module = nn.Module()
    module.gating_einsum = nn.Parameter(torch.randn(2, Dm, F_))
    before = module.gating_einsum.detach().clone()
    W.settle(module, frozenset({(F_, Dm), (Dm, F_)}), frozenset(), frozenset({(F_, Dm)}))
    assert module.gating_einsum.shape == (2 * F_, Dm)
    assert torch.equal(module.gating_einsum.detach(), before.transpose(1, 2).reshape(2 * F_, Dm))
    other = nn.Module()
    other.gating_einsum = nn.Parameter(torch.randn(2, Dm, F_))
    W.settle(other, frozenset({(F_, Dm), (Dm, F_)}))
    assert other.gating_einsum.shape == (2 * Dm, F_)


def test_praxis_combined_qkv_is_read_with_d_model_moved_last_and_read_back_in_its_own_shape():
    """Praxis' CombinedQKVProjectionLayer keeps ``w (3, d_model, H, D)`` and ``b (3, H, D)`` (okfit19: a
    correct fused MHA so written was a contract failure). With d_model moved last (a permutation that
    is not its own inverse) it is the ``(3·H·D, d_model)`` matrix; while the module runs it reads its
    own shape back, the same numbers."""
    H, Dh = 2, D // 2

    class Combined(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3, D, H, Dh))
            self.b = nn.Parameter(torch.randn(3, H, Dh))

        def forward(self, x):
            return torch.einsum("btd,kdnh->kbtnh", x, self.w) + self.b[:, None, None]

    module = Combined()
    x = torch.randn(2, 3, D)
    with torch.no_grad():
        before = module(x)
        w = module.w.detach().clone()
    W.settle(module, frozenset({(3 * D, D), (D, D)}))
    assert module.w.shape == (3 * D, D) and module.b.shape == (3 * D,)
    assert torch.equal(module.w.detach(), w.permute(0, 2, 3, 1).reshape(3 * D, D))  # rows: [q heads; k; v]
    with torch.no_grad():
        assert torch.allclose(module(x), before, atol=1e-6)
    assert "w" not in module.__dict__


def test_a_three_dim_kernel_two_readings_fit_groups_its_head_count_with_the_dim_after():
    """MaxText keeps MLA's ``wq_b`` as ``(q_lora_rank, H, nope + rope)``, an ``(in, H, D)`` kernel. With
    q_lora_rank = nope + rope (8, 2, 8) both ``(8·2, 8)`` (rows from its first two dims) and ``(8, 2·8)``
    (the ``(in, out)`` reading) are contract shapes (okfit19: wrong_output 30 of 48, read as the first).
    The reading that merges a head count with the dim after it is the kernel's; without head counts,
    or where only one reading fits, nothing changes."""
    module = nn.Module()
    module.wq_b = nn.Parameter(torch.randn(8, 2, 8))
    kernel = module.wq_b.detach().clone()
    W.settle(module, frozenset({(16, 8)}), heads=frozenset({2}))
    assert module.wq_b.shape == (8, 16) and torch.equal(module.wq_b.detach(), kernel.reshape(8, 16))
    other = nn.Module()
    other.wq_b = nn.Parameter(torch.randn(8, 2, 8))
    W.settle(other, frozenset({(16, 8)}))
    assert other.wq_b.shape == (16, 8)  # no head counts: the first reading, as before
    stack = nn.Module()
    stack.W = nn.Parameter(torch.randn(3, D, D))
    W.settle(stack, frozenset({(3 * D, D), (D, D)}), heads=frozenset({3}))
    assert stack.W.shape == (3 * D, D)  # a qkv stack whose count is a head count reads as before


class KeyedHeads(nn.Module):
    """Per-head modules in an nn.ModuleDict keyed "head_0", "head_1", … (12 heads: "head_10" after "head_9")."""

    def __init__(self, heads=12):
        super().__init__()
        width = 12
        self.heads = nn.ModuleDict({f"head_{i}": nn.ModuleDict({r: nn.Linear(width, 1) for r in "qkv"})
                                    for i in range(heads)})
        self.out = nn.Linear(width, width)


def test_per_head_modules_of_a_module_dict_keyed_by_number_split_a_role_in_key_order():
    roles = [W.Role(n, "linear", (12, 12), (12,)) for n in ("q_proj", "k_proj", "v_proj", "o_proj")]
    options, why = W.candidates(roles, _layers(KeyedHeads()), heads=(12,))
    assert why is None and options
    first = options[0]
    assert [name for name, _ in first.rows["q_proj"]] == [f"heads.head_{i}.q" for i in range(12)]
    assert first.layers["o_proj"] == "out"
    assert ("split", "q_proj", "heads.head_*.q") in [(n.kind, n.role, n.layer) for n in first.notes]
    # the layer's own name is no entry: w1 and w3 stay two layers, not a list of two
    assert W._entry_pattern("experts.expert_3.w1") == ("experts.expert_*.w1", (3,))
    assert W._entry_pattern("w1") == ("w1", ())
    assert W._entry_pattern("heads.head0.q") == ("heads.head*.q", (0,))
    assert W._entry_pattern("w2.0") == ("w2.*", (0,))  # a list's own name is no entry of a dict


def test_roles_of_one_width_interleaved_row_by_row_are_tried():
    d, f = 6, 10
    roles = [W.Role("w1", "linear", (f, d), None), W.Role("w2", "linear", (d, f), None),
             W.Role("w3", "linear", (f, d), None)]
    module = nn.Module()
    module.mlp1, module.mlp2 = nn.Linear(d, 2 * f, bias=False), nn.Linear(f, d, bias=False)
    options, why = W.candidates(roles, _layers(module), heads=())
    assert why is None
    rows = [m for m in options if any(n.kind == "stacked_rows" for n in m.notes)]
    gate_first = next(m for m in rows if m.rows["w1"][0][1][0] == 0)
    assert gate_first.rows["w1"] == [("mlp1", tuple(range(0, 2 * f, 2)))]  # gate = h[..., ::2]
    assert gate_first.rows["w3"] == [("mlp1", tuple(range(1, 2 * f, 2)))]  # up = h[..., 1::2]
    assert options[0].notes[0].kind == "stacked"  # the two blocks one after the other come first
    kinds = [any(n.kind == "stacked_rows" for n in m.notes) for m in options]
    assert kinds == sorted(kinds)  # every row-by-row reading after every other candidate
    # a fused qkv of one width keeps its usual candidates first (blocks, per head), rows after them all
    qkv, _ = W.candidates(ROLES, _layers(NanoGPT()), heads=(2,))
    late = [any(n.kind == "stacked_rows" for n in m.notes) for m in qkv]
    assert late == sorted(late) and not late[0]


def test_an_interleaved_gate_and_up_grade_as_swiglu(tmp_path):
    path = tmp_path / "swiglu.py"
    path.write_text(
        "# attnprep: swiglu\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        "class SwiGLU(nn.Module):\n"
        "    def __init__(self, d_model, d_ff):\n"
        "        super().__init__()\n"
        "        self.mlp1 = nn.Linear(d_model, 2 * d_ff, bias=False)\n"
        "        self.mlp2 = nn.Linear(d_ff, d_model, bias=False)\n\n"
        "    def forward(self, x):\n"
        "        h = self.mlp1(x)\n"
        "        return self.mlp2(F.silu(h[..., ::2]) * h[..., 1::2])\n")
    assert grade(path, seed=0, protect=()).passed
    path.write_text(path.read_text().replace("F.silu(h[..., ::2]) * h[..., 1::2]", "F.silu(h[..., ::2]) * h[..., ::2]"))
    assert not grade(path, seed=0, protect=()).passed


class RowParallel(nn.Module):
    """Megatron's row-parallel linear simulated on one device: shards over the input features, summed."""

    def __init__(self, d_in, d_out, tp):
        super().__init__()
        self.shards = nn.ModuleList(nn.Linear(d_in // tp, d_out, bias=False) for _ in range(tp))
        self.bias = nn.Parameter(torch.zeros(d_out))

    def forward(self, parts):
        return sum(s(p) for s, p in zip(self.shards, parts)) + self.bias


class WithRowParallel(nn.Module):
    def __init__(self, tp):
        super().__init__()
        self.tp = tp
        self.o_proj = RowParallel(D, D, tp)

    def forward(self, x):
        return self.o_proj(list(x.split(D // self.tp, -1)))


def test_row_parallel_shards_are_one_matrix_their_blocks_of_columns_read_as_views():
    torch.manual_seed(0)
    module = WithRowParallel(2)
    x = torch.randn(3, D)
    before = module(x)
    W.settle(module, shapes=frozenset({(D, D)}), heads=frozenset({4}))
    layers = {l.name: l for l in _layers(module)}
    assert set(layers) == {"o_proj"} and layers["o_proj"].weight == (D, D) and layers["o_proj"].bias == (D,)
    assert torch.allclose(module(x), before)  # the same function of the input
    with torch.no_grad():  # the grader's weight goes into the one matrix: each shard reads its columns
        module.o_proj.weight.copy_(torch.randn(D, D))
    assert torch.allclose(module(x), x @ module.o_proj.weight.T + module.o_proj.bias, atol=1e-6)
    module(x).sum().backward()
    assert module.o_proj.weight.grad is not None and "weight" not in module.o_proj.shards[0].__dict__
    # one shard (tp = 1) is lifted onto the module holding its bias as well
    single = WithRowParallel(1)
    W.settle(single, shapes=frozenset({(D, D)}))
    assert {l.name for l in _layers(single)} == {"o_proj"}
    # a list whose blocks make no contract matrix stays as it is
    other = WithRowParallel(2)
    W.settle(other, shapes=frozenset({(D, 2 * D)}))
    assert {l.name for l in _layers(other)} == {"o_proj.shards.0", "o_proj.shards.1", "o_proj.bias"}


def test_an_output_projection_per_head_summed_grades_as_the_contracts_o_proj(tmp_path):
    path = tmp_path / "mha.py"
    path.write_text(
        "# attnprep: mha\nimport math\nimport torch\nimport torch.nn as nn\n\n"
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_model, num_heads, dropout=0.0):\n"
        "        super().__init__()\n"
        "        self.H, self.D = num_heads, d_model // num_heads\n"
        "        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model) for _ in range(3))\n"
        "        self.o_heads = nn.ModuleList(nn.Linear(self.D, d_model, bias=False) for _ in range(num_heads))\n"
        "        self.o_bias = nn.Parameter(torch.zeros(d_model))\n\n"
        "    def forward(self, x, attention_mask=None, is_causal=False):\n"
        "        B, T, C = x.shape\n"
        "        q, k, v = (p(x).view(B, T, self.H, self.D).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))\n"
        "        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)\n"
        "        if attention_mask is not None:\n"
        "            s = s.masked_fill(~attention_mask[:, None, None, :], float('-inf'))\n"
        "        if is_causal:\n"
        "            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float('-inf'))\n"
        "        o = s.softmax(-1) @ v\n"
        "        return sum(self.o_heads[h](o[:, h]) for h in range(self.H)) + self.o_bias\n")
    result = grade(path, seed=0, protect=())
    assert result.passed, (result.checks, result.error)
    assert result.mapping["o_proj"] == "o_heads"
    path.write_text(path.read_text().replace("self.o_heads[h](o[:, h])", "self.o_heads[0](o[:, h])"))
    assert not grade(path, seed=0, protect=()).passed  # every head through the first head's block

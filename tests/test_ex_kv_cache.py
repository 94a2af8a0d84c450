"""kv_cache: the reference against torch's SDPA and the gqa reference, what the cached_module kind
grades (a prefill + decode script, every step against the full causal forward, the cache against the
K/V), its structure checks (rows through k_proj / v_proj, the cache's head count) and its reports
(the first step that diverges, the measured figure).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises, texts
from attnprep.grader import grade
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.cached_module import MAIN, CachedModule, output_names
from attnprep.grader.result import Verdict
from attnprep.solutions.gqa import GroupedQueryAttention
from attnprep.solutions.kv_cache import KVCacheAttention

from per_exercise import grouped_params

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "cached_module",
    "objects": ("KVCacheAttention",),
    "constructor": "d_model, num_heads, num_kv_heads",
    "params": lambda a: grouped_params(a),
}

CORPUS = Path(__file__).parent / "corpus" / "kv_cache"
F64 = torch.float64
EX = exercises.get("kv_cache")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def seeded(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=F64) * 0.5)
    return module.eval()


def script(module, x, lengths):
    """Run ``module`` over x (B, T, C) call by call: [(start, end, out, cache), …]."""
    cache, start, steps = None, 0, []
    for n in lengths:
        out, cache = module(x[:, start:start + n], cache)
        steps.append((start, start + n, out, cache))
        start += n
    return steps


def sdpa_full(module: KVCacheAttention, x):
    """Causal attention of all tokens by torch's SDPA with the module's weights: (out, k, v)."""
    B, T, C = x.shape
    H, G, D = module.num_heads, module.num_kv_heads, module.head_dim
    q = F.linear(x, module.q_proj.weight, module.q_proj.bias).view(B, T, H, D).transpose(1, 2)
    k = F.linear(x, module.k_proj.weight, module.k_proj.bias).view(B, T, G, D).transpose(1, 2)
    v = F.linear(x, module.v_proj.weight, module.v_proj.bias).view(B, T, G, D).transpose(1, 2)
    rep = H // G
    out = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), is_causal=True)
    out = F.linear(out.transpose(1, 2).reshape(B, T, C), module.o_proj.weight, module.o_proj.bias)
    return out, k, v


SIZES = [(16, 4, 2), (18, 6, 3), (12, 3, 3), (12, 3, 1), (8, 1, 1), (32, 8, 2)]
SCRIPTS = [[1], [5], [4, 1, 1, 3, 1], [1, 1, 1, 1], [2, 3, 3], [7, 2, 1]]


@pytest.mark.parametrize("B", [1, 3])
@pytest.mark.parametrize("lengths", SCRIPTS, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_reference_steps_equal_sdpa_over_all_tokens_so_far(size, lengths, B):
    module = seeded(KVCacheAttention(*size).to(F64))
    x = torch.randn(B, sum(lengths), size[0], generator=torch.Generator().manual_seed(1), dtype=F64)
    with torch.no_grad():
        full, k, v = sdpa_full(module, x)
        for start, end, out, (ck, cv) in script(module, x, lengths):
            assert out.shape == (B, end - start, size[0])
            torch.testing.assert_close(out, full[:, start:end], rtol=1e-10, atol=1e-10)
            assert ck.shape == cv.shape == (B, size[2], end, size[0] // size[1])  # num_kv_heads heads
            torch.testing.assert_close(ck, k[:, :, :end], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(cv, v[:, :, :end], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", SIZES[:4], ids=lambda s: "x".join(map(str, s)))
def test_reference_equals_the_gqa_reference_and_keeps_no_state(size):
    own = seeded(KVCacheAttention(*size).to(F64), seed=3)
    gqa = GroupedQueryAttention(*size).to(F64).eval()
    gqa.load_state_dict(own.state_dict())
    x = torch.randn(2, 9, size[0], generator=torch.Generator().manual_seed(4), dtype=F64)
    with torch.no_grad():
        steps = script(own, x, [4, 1, 3, 1])
        again = own(x[:, 4:5], steps[0][3])  # replayed: same cache, same answer
        for start, end, out, _ in steps:
            torch.testing.assert_close(out, gqa(x[:, :end], is_causal=True)[:, start:end], rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(again[0], steps[1][2], rtol=0, atol=0)
    assert not [n for n, _ in own.named_buffers()]


def test_cases_are_the_script_the_contract_promises():
    kind = kind_for(EX, seed=0)
    assert isinstance(kind, CachedModule)
    for ci in range(len(kind.configs)):
        cases = {c.name: c for c in kind.cases(ci)}
        main = cases[MAIN]
        calls = main.inputs["calls"]
        lengths = [c.end - c.start for c in calls]
        assert lengths[0] > 1 and 3 in lengths and lengths.count(1) >= 2  # prefill, one-token steps, a chunk of 3
        assert main.observe and all(c.start == p.end for p, c in zip(calls, calls[1:]))
        both = next(c for c in cases.values() if len({call.seq for call in c.inputs["calls"]}) == 2)
        seqs = [call.seq for call in both.inputs["calls"]]
        assert seqs[:4] == ["x", "x2", "x", "x2"]  # interleaved
        assert any(call.replay for call in both.inputs["calls"])
        assert any(call.end - call.start == 1 and call.start == 0 for call in both.inputs["calls"])  # a 1-token prefill
        checks = {c.check for c in cases.values()}
        assert {"causality", "batch"} <= checks
        shapes = kind.expected_shapes(ci, main)
        c = kind.configs[ci]
        D = c["d_model"] // c["num_heads"]
        assert list(shapes) == [n for call in calls for n in output_names(call, kind.specs)]
        assert shapes["step 3 out (pos 6..8)"] == (2, 3, c["d_model"])
        assert shapes["step 3 cache k (pos 0..8)"] == (2, c["num_kv_heads"], 9, D)


def test_kind_reference_cache_is_the_gqa_k_and_v():
    """The kind grades the cache against the K/V of the gqa reference's own projections."""
    kind = kind_for(EX, seed=2)
    ci = 0
    case = kind.cases(ci)[0]
    got = kind.reference(ci)(case)
    gqa = GroupedQueryAttention(**kind.configs[ci]).eval()
    weights = kind.role_weights(ci)
    with torch.no_grad():
        for role, t in weights.items():
            gqa.get_submodule(role).weight.copy_(t["weight"])
            gqa.get_submodule(role).bias.copy_(t["bias"])
        seen = {}
        for role in ("k_proj", "v_proj"):
            gqa.get_submodule(role).register_forward_hook(lambda m, a, out, role=role: seen.__setitem__(role, out))
        x = case.inputs["x"]
        full = gqa(x, is_causal=True)
    G, D = kind.configs[ci]["num_kv_heads"], kind.configs[ci]["d_model"] // kind.configs[ci]["num_heads"]
    for call in case.inputs["calls"]:
        out_name, k_name, v_name = output_names(call, kind.specs)
        torch.testing.assert_close(got[out_name], full[:, call.start:call.end], rtol=1e-5, atol=1e-6)
        for name, role in ((k_name, "k_proj"), (v_name, "v_proj")):
            want = seen[role].view(x.shape[0], x.shape[1], G, D).transpose(1, 2)[:, :, :call.end]
            torch.testing.assert_close(got[name], want, rtol=1e-6, atol=1e-6)


# --- structure: measured in the child, judged here ------------------------------------------------

REPROJECT_STYLES = {
    "linear modules": "k = self.k_proj(seen); v = self.v_proj(seen)",
    "F.linear": "k = F.linear(seen, self.k_proj.weight, self.k_proj.bias); v = F.linear(seen, self.v_proj.weight, self.v_proj.bias)",
    "matmul with W.T": "k = seen @ self.k_proj.weight.T + self.k_proj.bias; v = torch.matmul(seen, self.v_proj.weight.t()) + self.v_proj.bias",
    "einsum": "k = torch.einsum('btc,oc->bto', seen, self.k_proj.weight) + self.k_proj.bias; v = self.v_proj(seen)",
    # recognised by data flow, not by the function: a weight value meets an operand of the prefix's length
    "linalg.matmul": "k = torch.linalg.matmul(seen, self.k_proj.weight.T) + self.k_proj.bias; v = self.v_proj(seen)",
    "1x1 conv1d": "k = F.conv1d(seen.transpose(1, 2), self.k_proj.weight[:, :, None], self.k_proj.bias).transpose(1, 2); "
                  "v = self.v_proj(seen)",
    "multiply and sum": "k = (seen[:, :, None, :] * self.k_proj.weight).sum(-1) + self.k_proj.bias; "
                        "v = (seen.unsqueeze(-2) * self.v_proj.weight).sum(dim=-1) + self.v_proj.bias",
    "tensordot of the prefix only": "past = seen[:, :-T]; k = torch.cat([torch.tensordot(past, self.k_proj.weight, dims=([2], [1])) "
                                    "+ self.k_proj.bias, self.k_proj(x)], 1) if cache is not None else self.k_proj(x); v = self.v_proj(seen)",
}

REPROJECTING = '''# attnprep: kv_cache
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        seen = x if cache is None else torch.cat([cache[2], x], dim=1)
        S = seen.shape[1]
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        STYLE
        k = k.view(B, S, self.g, self.d).transpose(1, 2)
        v = v.view(B, S, self.g, self.d).transpose(1, 2)
        kr, vr = k.repeat_interleave(self.h // self.g, 1), v.repeat_interleave(self.h // self.g, 1)
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T)
        a = (q @ kr.transpose(-2, -1) / math.sqrt(self.d)).masked_fill(~mask, float("-inf")).softmax(-1)
        return self.o_proj((a @ vr).transpose(1, 2).reshape(B, T, C)), (k, v, seen)
'''


@pytest.mark.parametrize("style", list(REPROJECT_STYLES))
def test_reprojecting_the_prefix_fails_structure_whatever_the_call(style, tmp_path):
    path = tmp_path / "kv_cache.py"
    path.write_text(REPROJECTING.replace("STYLE", REPROJECT_STYLES[style]))
    result = grade(path)
    assert result.verdict is Verdict.STRUCTURE, (result.checks, result.error)
    assert [d.id for d in result.diagnoses] == ["cache_prefix_reprojected"]
    check = next(c for c in result.checks if c.id == "structure_projection_rows")
    assert check.passed is False
    p = check.message.params
    assert p["rows"] > p["allowed"] == p["B"] * p["new"]  # the measured figure against the allowed one
    assert p["rows"] in (p["B"] * p["total"], p["B"] * (p["total"] - p["new"])) and p["line"] > 0
    words = texts.render(check.message)
    assert f"multiplied {p['rows']} rows" in words and f"allowed {p['allowed']}" in words


def test_correct_attempts_pass_the_structure_checks(graded):
    result = graded(CORPUS / "ok_plain.py")
    rows = {c.id: c for c in result.checks}
    assert rows["structure_projection_rows"].passed and rows["structure_cache_heads"].passed


def test_cache_stored_after_repeat_kv_reports_the_heads(graded):
    result = graded(CORPUS / "cache_after_repeat_kv.py")
    assert result.verdict is Verdict.STRUCTURE
    check = next(c for c in result.checks if c.id == "structure_cache_heads")
    p = check.message.params
    assert check.passed is False and p["heads"] == 4 and p["allowed"] == 2  # config 0: 4 heads, 2 KV heads
    assert all(c.passed is not False for c in result.checks if not c.id.startswith("structure"))


# --- reports -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "output"), [
    ("cache_mask_not_offset", "step 2 out (pos 5)"),  # the first decode step attends to key 0 only
    ("cache_prepended", "step 2 cache k (pos 0..5)"),  # its output is right, its cache is not
    ("missing_scale", "step 1 out (pos 0..4)"),
])
def test_the_first_diverging_step_is_named_with_its_positions(attempt, output, graded):
    result = graded(CORPUS / f"{attempt}.py")
    assert result.output_diff is not None and result.output_diff.case == MAIN
    assert result.output_diff.output == output


def test_wrong_axis_is_named_behind_the_exception(graded):
    result = graded(CORPUS / "cache_wrong_axis.py")
    assert result.verdict is Verdict.ERROR and not result.internal
    (d,) = result.diagnoses
    assert d.id == "cache_wrong_axis" and d.evidence[0].params["dim"] == 1 and d.evidence[0].params["axis"] == 2
    assert "torch.cat" in texts.render(d.evidence[0])


# --- texts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["kv_cache", "mla_decode"])
def test_own_mistakes_have_chinese_texts(folder):
    from tests.test_zh_texts import problems

    here = exercises.HERE / folder
    en = tomllib.loads((here / "mistakes.toml").read_text(encoding="utf-8"))["mistake"]
    zh = tomllib.loads((here / "mistakes.zh.toml").read_text(encoding="utf-8"))["mistake"]
    assert [m["id"] for m in zh] == [m["id"] for m in en]
    found = [p for e, z in zip(en, zh) for key in ("title", "why", "fix") for p in problems(f"{e['id']}.{key}", e[key], z[key])]
    assert not found, "\n".join(found)
    assert all(set(z) == {"id", "title", "why", "fix"} for z in zh)


def test_kind_texts_exist():
    keys = ["cached_module." + k for k in ("forward_signature", "cache_heads_ok", "cache_heads_bad", "rows_ok",
                                           "rows_bad", "prefix_ok", "prefix_bad", "evidence_axis", "evidence_product",
                                           "evidence_no_cache", "evidence_same_cache", "evidence_state")]
    keys += ["check_name.structure_cache_heads", "check_name.structure_projection_rows",
             "check_name.structure_prefix_heads", "variant.cache_not_returned:new_only"]
    missing = [k for k in keys if not texts.has(k, "en")]
    assert not missing


# --- what each call is given -----------------------------------------------------------------------


def test_every_call_is_given_a_copy_and_one_starts_from_the_references_cache():
    """Fresh copies of the cache each call (never the objects returned), and a decode step from
    the reference's cache of tokens the attempt never saw, whose outputs are graded."""
    kind = kind_for(EX, seed=0)
    seen = []

    class Spy(KVCacheAttention):
        def forward(self, x, cache=None):
            out, new = super().forward(x, cache)
            seen.append((cache, new))
            return out, new

    module = seeded(Spy(**kind.configs[0]).float())
    case = next(c for c in kind.cases(0) if any(call.given for call in c.inputs["calls"]))
    kind.run(module, case)
    (first, _), (second, _) = seen
    returned = seen[0][1]
    assert first is not None and second is not returned and all(a is not b for a, b in zip(second, returned))
    assert all(torch.equal(a, b) for a, b in zip(second, returned))  # the same values, other tensors
    call = case.inputs["calls"][0]
    assert call.given and call.start > 0
    want = kind.given_cache(0, frozenset(), case.inputs["x"][:, :call.start])
    assert [tuple(t.shape) for t in first] == [tuple(t.shape) for t in want]


def test_keys_kept_by_the_id_of_the_returned_cache_fail(graded):
    result = graded(CORPUS / "cache_kept_by_id.py")
    assert not result.passed and result.verdict is not Verdict.STRUCTURE


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("split_order", "causal_tri"), "extra": {"repeat", "layer_drop"}}


def test_a_cached_grade_of_a_script_is_a_fresh_grade(graded):
    """The grade ``graded`` (tests/conftest.py) keeps of a script of calls' error equals a fresh one
    (tests/test_grader.py does the same for a pass, a named mistake and an error of a module)."""
    from test_grader import assert_cached_is_fresh

    assert_cached_is_fresh(graded, CORPUS / "cache_wrong_axis.py")


def test_weights_stored_in_out_count_the_rows_of_their_first_side(graded):
    """A bare (in, out) weight used as x @ W (GPT-2's Conv1D habit) takes in-features from its first
    side: a decode step multiplies B * new rows, not numel / out-features (was 4 for 2: structure)."""
    result = graded(CORPUS / "ok_bare_transposed_weights_stack_cache.py")
    assert result.verdict is Verdict.PASSED, (result.checks, result.error)
    check = next(c for c in result.checks if c.id == "structure_projection_rows")
    assert check.passed is True

"""Where an attempt first goes wrong (the divergence finder) and the layout-aware shapes panel."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from attnprep import texts, wording
from attnprep.grader import grade
from attnprep.grader.divergence import Matcher, name_shape
from attnprep.grader.trace import Step
from per_exercise import rows
from pointed import assert_pointed

CORPUS = Path(__file__).parent / "corpus"

SEED_FUSED = '''\
# attnprep: mha_fused
import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.qkv_proj(x)
        q, k, v = qkv.view(B, T, 3, self.num_heads, self.head_dim).unbind(2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if is_causal:
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~mask, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn = self.dropout(scores.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
'''


def test_the_seed_notes_fused_attempt_points_at_its_unbind_line(tmp_path):
    """The fused QKV module that forgets the transpose after unbind raises at the causal
    masked_fill; the report says q already had the wrong layout on the unbind line."""
    path = tmp_path / "fused.py"
    path.write_text(SEED_FUSED, encoding="utf-8")
    result = grade(path)
    assert result.verdict.value == "error"
    d = result.divergence
    assert d is not None and d.line == 20 and "unbind(2)" in d.code
    assert d.named == "(B, T, H, D)" and "transpose(1, 2)" in d.ref_code
    words = wording.divergence_text(d)
    assert words.startswith("line 20:") and "transpose" in words


@pytest.mark.parametrize(("attempt", "line_has"), rows("divergence_line"))  # tests/corpus/<id>/examples.toml
def test_the_divergence_is_the_line_that_makes_the_mistake(attempt, line_has, graded):
    result = graded(CORPUS / attempt)
    assert not result.passed and result.divergence is not None
    assert line_has in result.divergence.code, result.divergence


def test_a_passing_attempt_is_not_traced(monkeypatch):
    from attnprep.grader import engine

    calls = []
    monkeypatch.setattr(engine, "_divergence", lambda *a, **k: calls.append(a))
    result = grade(CORPUS / "mha" / "ok_textbook.py")
    assert result.passed and result.divergence is None and calls == []


@pytest.mark.parametrize("attempt", ["mha/causal_ignored.py", "mha/missing_scale.py"])
def test_a_grade_without_the_divergence_is_the_same_grade_less_the_line(attempt, graded, monkeypatch):
    """``grade(..., divergence=False)`` forks no trace child and says no line; the verdict, the
    checks and the mistakes named are the whole grade's (a scale mistake's evidence aside: it is
    said of the case the divergence was traced on)."""
    from dataclasses import replace

    from attnprep.grader import engine

    whole = graded(CORPUS / attempt)
    assert not whole.passed and whole.divergence is not None
    monkeypatch.setattr(engine, "_start_trace", lambda *a, **k: pytest.fail("a trace child was started"))
    bare = grade(CORPUS / attempt, divergence=False)
    assert not bare.internal and bare.divergence is None
    assert (bare.verdict, bare.checks, [d.id for d in bare.diagnoses]) == (whole.verdict, whole.checks, [d.id for d in whole.diagnoses])
    if attempt.endswith("causal_ignored.py"):
        assert replace(bare, duration_s=0.0) == replace(whole, duration_s=0.0, divergence=None)


def test_json_carries_the_divergence(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    (tmp_path / "fused.py").write_text(SEED_FUSED, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    doc = json.loads(CliRunner().invoke(app, ["check", "fused.py", "--json"]).stdout)
    div = doc["results"][0]["divergence"]
    assert div["line"] == 20 and "unbind" in div["code"] and div["detail"].startswith("line 20:")
    ok = tmp_path / "ok.py"
    ok.write_text((CORPUS / "mha_fused" / "ok_split_textbook.py").read_text(encoding="utf-8"), encoding="utf-8")
    doc = json.loads(CliRunner().invoke(app, ["check", "ok.py", "--json"]).stdout)
    assert doc["results"][0]["divergence"] is None


def test_shapes_are_named_by_axis():
    axes = {"B": 3, "T": 7, "C": 16, "H": 4, "D": 4}
    assert name_shape((3, 7, 4, 4), axes) == "(B, T, H, D)"
    assert name_shape((3, 4, 7, 7), axes) == "(B, 4, T, T)"  # one 4 of two candidates: a number
    assert name_shape((3, 7, 16), axes) == "(B, T, C)"


def test_a_real_layout_difference_is_still_a_mismatch():
    from attnprep.grader.judge import same_layout_family

    assert same_layout_family((3, 4, 7, 4), (3, 7, 4, 4))  # (B, T, H, D) for (B, H, T, D)
    assert same_layout_family((3, 4, 7, 4), (12, 7, 4))  # (B*H, T, D)
    assert same_layout_family((3, 4, 7, 4), (3, 2, 2, 7, 4))  # GQA's (B, G, n_rep, T, D)
    assert not same_layout_family((3, 4, 7, 7), (3, 4, 7, 4))
    assert not same_layout_family((3, 4, 7, 7), (3, 4, 49, 1, 2))


def test_shared_kv_heads_are_a_layout_too():
    from attnprep.grader.judge import same_layout_family

    assert same_layout_family((3, 4, 4, 7), (3, 2, 7, 4))  # GQA's k^T before repeat: G of H heads
    assert same_layout_family((3, 4, 7, 4), (3, 1, 7, 4))  # MQA: one shared head
    assert not same_layout_family((3, 4, 7, 4), (3, 3, 7, 4))  # 3 does not divide 4
    assert same_layout_family((3, 4, 4, 7), (3, 2, 1, 4, 7))  # GQA's k^T as (B, G, 1, D, T), broadcast
    assert not same_layout_family((3, 4, 7, 4), (3, 7, 4))  # one head's part: only where heads are known (one_head)
    assert not same_layout_family((3, 4, 7, 4), (3, 7, 5))


def test_a_part_of_the_head_features_is_a_layout_of_q_and_k():
    """MLA's scores as q_nope·k_nopeᵀ + q_pe·k_peᵀ over (B*H) (baddbmm): the q seen is q_pe."""
    from attnprep.grader.judge import _shape_row

    assert _shape_row("q", (3, 2, 7, 8), (6, 7, 4)).equivalent  # (B*H, T, rope) of (B, H, T, nope + rope)
    assert _shape_row("k^T", (3, 2, 8, 7), (6, 4, 7)).equivalent
    assert not _shape_row("scores", (3, 2, 7, 7), (3, 2, 7, 4)).equivalent  # only the feature axis
    assert not _shape_row("q", (3, 2, 7, 8), (3, 2, 4, 8)).equivalent  # T is no feature axis


# --- the line where it first goes wrong, inside helpers, in numbers, in tables of sizes ------------


def _with(tmp_path, attempt: str, old: str, new: str) -> tuple[Path, int]:
    """A corpus attempt with ``old`` replaced by ``new`` (once), and the line ``new`` is on."""
    text = (CORPUS / attempt).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    text = text.replace(old, new)
    path = tmp_path / Path(attempt).name
    path.write_text(text, encoding="utf-8")
    return path, text[: text.index(new)].count("\n") + 1


@pytest.mark.parametrize(("old", "new"), [
    ("exp_x = torch.exp(x - x_max)", "exp_x = torch.exp(x + x_max)"),
    ("return exp_x / torch.sum(exp_x, dim=dim, keepdim=True)", "return exp_x / torch.sum(exp_x, dim=-1, keepdim=True)"),
])
def test_a_wrong_softmax_helper_is_pointed_at_inside_the_helper(tmp_path, old, new):
    """The attention calls the file's own softmax: the line is the helper's, not the call's."""
    path, line = _with(tmp_path, "sdpa/ok_torch_docs.py", old, new)
    result = grade(path)
    assert not result.passed and result.divergence is not None
    assert result.divergence.line == line, result.divergence


def test_a_wrong_number_set_in_init_is_pointed_at_where_it_is_set(tmp_path):
    path, line = _with(tmp_path, "mha/ok_helpers_combined_mask.py", "self.scale = self.head_dim ** -0.5",
                       "self.scale = self.head_dim ** -0.25")
    result = grade(path)
    d = result.divergence
    assert d is not None and (d.line, d.reason, d.name) == (line, "scalar", "self.scale"), d
    assert d.named != d.ref_named  # the attempt's value and the reference's
    assert d.named in wording.divergence_text(d) and d.ref_named in wording.divergence_text(d)


@pytest.mark.parametrize(("attempt", "line_has", "reason"), rows("divergence_reason"))
def test_the_divergence_says_why(attempt, line_has, reason, graded):
    result = graded(CORPUS / attempt)
    d = result.divergence
    assert not result.passed and d is not None
    assert line_has in d.code and d.reason == reason, d


def test_every_reason_reads_in_both_languages():
    from attnprep.grader.result import Divergence

    for reason in ("made", "role", "layout", "incomplete", "values", "short", "raised", "skipped", "scalar", "dtype",
                   "input", "unused", "contract", "structure"):
        d = Divergence(12, "x = y", "x", (3, 4), "(B, T)", reason, "y", "(B, T)", "y = z")
        for lang in texts.LANGUAGES:
            words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                            ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
            assert "12" in words and "{" not in words, (reason, lang)


@pytest.mark.parametrize(("attempt", "line_has"), rows("divergence_in_head_loop"))
def test_an_attempt_that_loops_over_heads_is_pointed_at_its_slip(attempt, line_has, graded):
    """Per-head (or per-(b, h)) tensors hold one head of a reference stage: they line up with it,
    so the first one that matches nothing is the slip, not the first per-head slice."""
    result = graded(CORPUS / attempt)
    d = result.divergence
    assert not result.passed and d is not None
    assert line_has in d.code, d


def _step(values: torch.Tensor, line: int = 1) -> Step:
    return Step(line, "x = f(x)", "mul", list(values.shape), "torch.float32", values=values.flatten().double())


def test_a_slice_matches_one_head_of_the_same_stage_only():
    """One head of (B, H, T, D) or one (b, h) pair matches its stage; a constant or a head with
    one value changed matches no slice."""
    g = torch.Generator().manual_seed(0)
    q, scores = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64), torch.randn(2, 3, 5, 5, generator=g, dtype=torch.float64)
    matcher = Matcher([_step(q), _step(scores)])
    assert matcher.matches(q[:, 1]) == [] and [i for i, _ in matcher.slice_of(q[:, 1])] == [0]
    assert [i for i, _ in matcher.slice_of(scores[1, 2])] == [1]  # one (b, h) pair
    assert [i for i, _ in matcher.slice_of(scores[:, :, 2:3])] == [1]  # a row block
    wrong = scores[0, 1].clone()
    wrong[2, 3] += 0.5
    assert matcher.slice_of(wrong) == []
    assert matcher.slice_of(torch.zeros(5, 4, dtype=torch.float64)) == []
    assert matcher.slice_of(torch.full((5, 5), -math.inf, dtype=torch.float64)) == []


def test_the_first_wrong_step_is_found_by_named_rules_and_explain_does_not_import_back():
    """divergence._first_wrong tries STEP_RULES on each step, then END_RULES: each a function whose
    docstring says its rule; grader/explain.py reads the shared step helpers from grader/found.py,
    never from divergence (which imports it), so the two modules form no import cycle."""
    import ast

    from attnprep.grader import divergence, explain

    for rule in divergence.STEP_RULES + divergence.END_RULES:
        assert callable(rule) and (rule.__doc__ or "").strip(), rule
    tree = ast.parse(Path(explain.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "attnprep.grader.found" in imported
    assert not any(m and m.endswith("divergence") for m in imported), imported
    from_grader = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "attnprep.grader"
                   for a in n.names]
    assert "divergence" not in from_grader


@pytest.mark.parametrize("seed", range(40))
def test_the_window_search_finds_the_first_close_window_as_one_comparison_each_would(seed):
    """found.first_close_window, all windows at once, is the loop of found.close over each start."""
    from attnprep.grader.found import close, first_close_window

    g = torch.Generator().manual_seed(seed)
    dims = int(torch.randint(1, 4, (1,), generator=g))
    shape = [int(s) for s in torch.randint(1, 7, (dims,), generator=g)]
    axis = int(torch.randint(0, dims, (1,), generator=g))
    shape[axis] += 3
    t = torch.randn(shape, generator=g).round(decimals=1)  # repeated values: several windows may match
    if seed % 5 == 0:
        t[(0,) * dims] = float("nan")
    n = int(torch.randint(1, shape[axis] + 1, (1,), generator=g))
    start = int(torch.randint(0, shape[axis] - n + 1, (1,), generator=g))
    part = t.narrow(axis, start, n).clone()
    if seed % 3 == 0:
        part = part + 1e-3 * torch.randn(part.shape, generator=g)  # near, not equal: the tolerance decides
    if seed % 4 == 0:
        part = part.round()  # often matches nowhere
    eps = 1e-3 if seed % 7 == 0 else 0.0
    loop = next((s for s in range(shape[axis] - n + 1) if close(t.narrow(axis, s, n), part, eps)), None)
    assert first_close_window(t, axis, part, eps) == loop
    assert loop is not None or seed % 4 == 0 or seed % 3 == 0


def test_a_helper_that_only_passes_its_arguments_on_is_blamed_at_its_call(graded):
    """engine._argument_helpers: one ``return`` of an expression of the helper's own arguments, no number
    or text of its own (what it computes is its caller's choice); a helper with constants, more than
    one statement, or names from outside is the learner's own code, blamed where it goes wrong."""
    from attnprep.grader.engine import _argument_helpers

    source = '''
def transpose(x, perm):
    """Paddle's spelling."""
    return x.permute(*perm)
def cast(x, dtype): return x.to(dtype)
def mean(x, axis=-1): return x.mean(dim=axis, keepdim=True)
def rotate_half(x): return torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]), dim=-1)
def split(x):
    a, b = x.chunk(2, -1)
    return a
def heads(x): return x.view(B, T, H, D)
def nothing(): return torch
'''
    assert set(_argument_helpers(source)) == {"transpose", "cast", "mean"}
    for path, line in (("mha_fused/paddle_perm_heads_before_qkv.py", 29),
                       ("norms/mindspore_reduce_mean_rms_centred_ln_eps_out.py", 28)):
        result = graded(Path(__file__).parent / "corpus" / path)
        assert result.divergence.line == line and result.divergence.reason == "helper_passed", (path, result.divergence)


def test_scores_up_to_a_number_per_row_are_the_same_scores():
    """divergence._row_shifted: what a softmax cannot tell apart (BLOOM's slope·j for -slope·(i - j))
    is a match; a difference along the keys, a mask in other places, or the same tensor is not."""
    import torch

    from attnprep.grader.divergence import _row_shifted

    torch.manual_seed(0)
    r = torch.randn(2, 3, 5, 5)
    r = r.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    per_row = torch.randn(2, 3, 5, 1)
    assert _row_shifted(r + per_row, r)
    assert not _row_shifted(r, r)  # the same scores: a plain match, not this one
    assert not _row_shifted(r + torch.arange(5.0), r)  # a bias along the keys changes the softmax
    assert not _row_shifted(r.nan_to_num(neginf=-1e9) + per_row, r)  # finite where the reference blocks


def _fills_uninitialised_memory(x):
    a = torch.empty(4, 4)
    b = torch.empty_like(x)
    c = x.new_empty((4, 4))
    a.copy_(x * 2)
    return a + b.zero_() + c.fill_(1.0)


def test_uninitialised_memory_is_kept_without_values():
    """What ``torch.empty`` (``empty_like``, ``new_empty``) hands back holds whatever the allocator
    kept there last, often a tensor just freed: in the grading process a variant's output, the very
    wrong value of the attempt being graded. A reference trail whose ``nn.Linear(...)`` in a merge
    held the attempt's transposed delta that way once made the finder take the delta for right and
    say the next line (a line that depended on what the test worker had graded before). Such a
    step is kept as zeros, whatever the memory held; what is written into it has its own values."""
    from attnprep.grader.trace import Tracer

    x = torch.randn(4, 4)
    for _ in range(8):  # memory just freed that held numbers, for the allocator to hand back
        torch.full((4, 4), 3.0).exp()
    tracer = Tracer([x], __file__)
    with tracer, torch.no_grad():
        _fills_uninitialised_memory(x)
    made = {s.func: s for s in tracer.steps}
    assert {"empty", "empty_like", "new_empty"} <= set(made)
    assert all(torch.equal(made[f].values, torch.zeros(16, dtype=torch.float64)) for f in ("empty", "empty_like", "new_empty"))
    assert made["copy_"].values is not None and torch.equal(made["copy_"].values, (x * 2).double().flatten())
    assert made["fill_"].values is not None and made["zero_"].values is not None


# A function of the file that the reference defines too (the contract's mask helper) returning
# another value than the reference's (the blocked positions for the allowed ones): said at its
# return ("output"), whether the caller then uses it consistently or not. These had lost their line
# when a second ``divergence._function_at`` (a node, not a name) shadowed the first: the rule
# compared functions of two files by node and never matched.
RETURNS_ANOTHER = [
    "causal/causal_mask_inverted.py",
    "causal/causal_mask_inverted_consistent.py",
    "causal/causal_mask_blocked_where_consistent.py",
    "sliding_window/window_mask_inverted_blocked.py",
    "sliding_window/window_mask_inverted_consistent.py",
    "sliding_window/distance_mask_returns_blocked_where.py",
]


@pytest.mark.parametrize("name", RETURNS_ANOTHER)
def test_a_helper_returning_another_value_is_said_at_its_return(name, graded):
    assert_pointed(CORPUS / name, graded(CORPUS / name), "output")


def test_a_helper_handed_the_other_tensor_is_said_at_the_call(graded):
    """A helper the reference defines too, given ``v`` where the reference gives it ``k``: the call
    says so ("handed"), not only that wrong values start there."""
    path = CORPUS / "decoder_layer" / "stub_helpers_rope_on_v_not_k.py"
    assert_pointed(path, graded(path), "handed")


# A layer left out: the input only rearranged into heads where the reference projects it first
# (``q = x.view(B, T, H, D).transpose(1, 2)``): said at that line, not at the scores' product that
# first holds other numbers (a chain of rearrangements of an input is otherwise passed over, as one is)
LAYER_LEFT_OUT = ["mha/mha_query_projection_forgotten.py", "gqa/gqa_value_heads_straight_from_x.py"]


@pytest.mark.parametrize("name", LAYER_LEFT_OUT)
def test_a_layer_left_out_is_said_where_its_input_is_taken_as_it_came(name, graded):
    assert_pointed(CORPUS / name, graded(CORPUS / name))


def test_a_norm_missing_its_normalisation_is_not_right_on_its_own_normalised_value(graded):
    """The second opinion runs a function of the file on the reference's values: a norm that lost
    its normalisation gives the reference's result on the reference's own normalised ``h`` (a value
    made inside the reference's RMSNorm), which says nothing about the call. Values made inside the
    reference's function of that name (Hugging Face's ``LlamaRMSNorm`` for ``RMSNorm``) are not tried:
    the line is inside the norm, not at its call."""
    path = CORPUS / "decoder_layer" / "decoder_layer_norm_scale_only_hf_names.py"
    assert_pointed(path, graded(path))

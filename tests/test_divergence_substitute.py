"""The second opinion on a divergence inside a function the attempt defines (grader/substitute.py):
the function run again on the reference's values tells "the function is wrong" (its own line) from
"the function is right and the call gives it the wrong thing" (the call's line, or the line that
made the wrong argument). Attempts written here, in styles the corpus does not use."""

from __future__ import annotations

import time

import pytest

from attnprep import texts
from attnprep.grader import grade
from attnprep.grader.result import Divergence

SWIGLU_GLU = '''\
# attnprep: swiglu
"""Shazeer's GLU variants written out: gate and value go through one helper."""

import torch
import torch.nn as nn


def glu(gate, value):
    return gate * torch.sigmoid(gate) * value


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        gate, value = self.w1(x), self.w3(x)
        hidden = glu(gate, value)
        return self.w2(hidden)
'''

CAUSAL_MASKED_SOFTMAX = '''\
# attnprep: causal
import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def masked_softmax(scores, keep):
    """softmax over the last axis, the entries where keep is False left out."""
    return scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) * D ** -0.5
    keep = causal_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    probs = masked_softmax(scores, keep)
    return probs @ v
'''

CAUSAL_HIDE_FUTURE = '''\
# attnprep: causal
import math

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def hide_future(scores):
    """scores (..., T, T) with the future keys at -inf."""
    T = scores.shape[-1]
    future = torch.ones(T, T, dtype=torch.bool, device=scores.device).triu(1)
    return scores.masked_fill(future, float("-inf"))


def causal_attention(q, k, v, attention_mask=None):
    D = q.shape[-1]
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    scores = hide_future(scores)
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
'''

MHA_FUSED_ATTEND = '''\
# attnprep: mha_fused
import math

import torch
import torch.nn as nn


def attend(q, k, v, num_heads, keep=None):
    """q, k, v (B, T, C) -> (B, T, C): heads split, scaled scores, masked softmax, heads merged."""
    B, T, C = q.shape
    q, k, v = (t.view(B, T, num_heads, C // num_heads).transpose(1, 2) for t in (q, k, v))
    s = q @ k.transpose(-2, -1) / math.sqrt(C // num_heads)
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    return (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.qkv_proj(x)
        q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        keep = None
        if attention_mask is not None:
            keep = attention_mask[:, None, None, :]
        if is_causal:
            tril = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            keep = tril if keep is None else keep & tril
        return self.o_proj(attend(q, k, v, self.num_heads, keep))
'''


def _graded(tmp_path, source: str, old: str, new: str):
    """``source`` with ``old`` replaced by ``new`` (once), graded; and the line ``new`` is on."""
    assert source.count(old) == 1, old
    text = source.replace(old, new)
    path = tmp_path / f"attempt_{abs(hash(new)) % 10**6}.py"
    path.write_text(text, encoding="utf-8")
    return grade(path), text[: text.index(new)].count("\n") + 1


@pytest.mark.parametrize(("source", "old", "new"), [
    # the gate and the value passed in each other's place: the helper is right on the reference's order
    (SWIGLU_GLU, "hidden = glu(gate, value)", "hidden = glu(value, gate)"),
    # the blocked entries passed where the kept ones are asked for
    (CAUSAL_MASKED_SOFTMAX, "probs = masked_softmax(scores, keep)", "probs = masked_softmax(scores, ~keep)"),
    # keys and values passed in each other's place to a helper that splits heads in a generator expression
    (MHA_FUSED_ATTEND, "attend(q, k, v, self.num_heads, keep)", "attend(q, v, k, self.num_heads, keep)"),
])
def test_a_right_helper_given_the_wrong_value_is_blamed_at_its_call(tmp_path, source, old, new):
    result, line = _graded(tmp_path, source, old, new)
    d = result.divergence
    assert not result.passed and d is not None
    assert (d.line, d.reason) == (line, "given"), d
    assert d.ref_name in ("glu", "masked_softmax", "attend")


@pytest.mark.parametrize(("source", "old", "new"), [
    (SWIGLU_GLU, "return gate * torch.sigmoid(gate) * value", "return gate * torch.sigmoid(gate) + value"),
    (CAUSAL_MASKED_SOFTMAX, '.softmax(dim=-1)', '.softmax(dim=-2)'),
    (CAUSAL_HIDE_FUTURE, ".triu(1)", ".triu(0)"),
    (MHA_FUSED_ATTEND, "s = q @ k.transpose(-2, -1) / math.sqrt(C // num_heads)",
     "s = q @ k.transpose(-2, -1) / math.sqrt(C)"),
])
def test_a_wrong_helper_is_still_blamed_inside(tmp_path, source, old, new):
    """Run on the reference's values the helper still gives values the reference never has: its
    own line stays (the same call syntax as above, only running it tells)."""
    result, line = _graded(tmp_path, source, old, new)
    d = result.divergence
    assert not result.passed and d is not None
    assert d.line == line and d.reason not in ("given", "given_made"), d


def _outside_forward(body: str) -> str:
    """SWIGLU_GLU whose ``glu`` runs ``body`` when called from anywhere but the module's forward
    (state of the file's own: what a second run of the helper meets, never the grade's runs)."""
    source = SWIGLU_GLU.replace("def glu(gate, value):\n",
                                f"INSIDE = []\n\n\ndef glu(gate, value):\n    if not INSIDE:\n        {body}\n")
    source = source.replace("        gate, value = self.w1(x), self.w3(x)\n",
                            "        INSIDE.append(1)\n        gate, value = self.w1(x), self.w3(x)\n")
    return source.replace("        return self.w2(hidden)\n", "        INSIDE.pop()\n        return self.w2(hidden)\n")


def test_a_helper_that_raises_when_run_again_leaves_the_line_inside(tmp_path):
    """A helper that raises when run on its own gives no second opinion: the finder's line stays."""
    source = _outside_forward("raise RuntimeError('only from forward')")
    result, line = _graded(tmp_path, source, "hidden = glu(gate, value)", "hidden = glu(value, gate)")
    d = result.divergence
    assert not result.passed and d is not None
    assert d.reason != "given" and d.line != line, d


def test_a_helper_that_hangs_when_run_again_costs_a_bounded_time(tmp_path):
    """The child of the second opinion has its own short time limit: a helper that loops forever
    when run on its own leaves the finder's line, and the grade ends well within its timeout."""
    from attnprep.grader import substitute

    source = _outside_forward("while True:\n            pass")
    start = time.perf_counter()
    result, line = _graded(tmp_path, source, "hidden = glu(gate, value)", "hidden = glu(value, gate)")
    d = result.divergence
    assert not result.passed and d is not None
    assert d.reason != "given" and d.line != line, d
    assert time.perf_counter() - start < 30 + 2 * substitute.CHILD_SECONDS


def test_the_new_reasons_read_in_both_languages():
    for reason in ("given", "given_made"):
        d = Divergence(12, "x = f(y)", "x", (), "", reason, "f")
        for lang in texts.LANGUAGES:
            words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                            ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
            assert "12" in words and "f" in words and "{" not in words, (reason, lang)

"""Where an attempt first goes wrong (the divergence finder) and the layout-aware shapes panel."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from attnprep import texts, wording
from attnprep.grader import grade
from attnprep.grader.divergence import name_shape

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


@pytest.mark.parametrize(("attempt", "line_has"), [
    ("mha/split_heads_no_transpose.py", ".view(B, H, T, D)"),
    ("mha/merge_heads_no_transpose.py", "out.reshape(B, T, C)"),
    ("mha/missing_scale.py", "scores = q @ k.transpose(-2, -1)"),
    ("gqa/gqa_heads_tiled.py", ".repeat("),
    ("mla/masked_fill_discarded.py", "the result is not assigned"),
])
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

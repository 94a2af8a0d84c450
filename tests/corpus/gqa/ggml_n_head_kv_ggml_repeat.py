# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""ggml naming (wq, wk, n_head_kv, n_rep) and ggml_repeat's semantics carried over: ggml_repeat tiles
the whole tensor, so the KV heads come out [k0, k1, k0, k1] where consecutive query heads share a
KV head ([k0, k0, k1, k1])."""

import math

import torch
import torch.nn as nn


def ggml_repeat(t, n_rep):
    # ggml_repeat(ctx, a, b): tile a to b's shape
    return t.repeat(1, n_rep, 1, 1)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_head, self.n_head_kv = num_heads, num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wo = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_head, self.head_dim).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_head_kv, self.head_dim).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_head_kv, self.head_dim).transpose(1, 2)
        keys = ggml_repeat(xk, self.n_rep)
        values = ggml_repeat(xv, self.n_rep)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device).triu(1)
            scores = scores + mask
        scores = self.attn_dropout(torch.softmax(scores.float(), dim=-1).type_as(xq))
        output = torch.matmul(scores, values)
        return self.wo(output.transpose(1, 2).contiguous().view(bsz, seqlen, -1))
# bug-line: 16

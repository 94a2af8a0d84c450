# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Meta-style repeat_kv on (bs, slen, n_kv, hd) but the new axis inserted before n_kv: x[:, :, None] expands to (bs, slen, n_rep, n_kv, hd), a tile."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(bs, slen, n_rep, n_kv_heads, head_dim).reshape(bs, slen, n_kv_heads * n_rep, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, num_heads * self.head_dim)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wo = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        keys = repeat_kv(xk, self.n_heads // self.n_kv_heads).transpose(1, 2)
        values = repeat_kv(xv, self.n_heads // self.n_kv_heads).transpose(1, 2)
        xq = xq.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if is_causal:
            scores = scores + torch.full((seqlen, seqlen), float("-inf"), device=x.device).triu(1)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)
# bug-line: 17

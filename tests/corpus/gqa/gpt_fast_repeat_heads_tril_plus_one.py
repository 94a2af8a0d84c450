# attnprep: gqa
# expect: mask_leak
# diagnosis: gqa_heads_tiled + causal_leaks_next
"""pytorch-labs/gpt-fast model.py habits: a ModelArgs-like dataclass (n_head, n_local_heads,
head_dim), wq / wk / wv / wo, q, k, v split with `.view(bsz, seqlen, n_head, head_dim)` then
`map(lambda x: x.transpose(1, 2), (q, k, v))`, a boolean `causal_mask` built from
torch.tril(torch.ones(...)), and a hand-written `_sdpa` replacing F.scaled_dot_product_attention.
Two slips: the kv heads are grown with `.repeat(1, n_rep, 1, 1)` (tiled, not grouped), and the
causal mask is tril(diagonal=1), one future key visible."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int
    n_head: int
    n_local_heads: int

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_head


def _sdpa(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
    att = att.masked_fill(~mask, float("-inf"))
    return F.softmax(att, dim=-1) @ v


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.config = ModelArgs(d_model, num_heads, num_kv_heads)
        kv_size = num_kv_heads * self.config.head_dim
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, kv_size)
        self.wv = nn.Linear(d_model, kv_size)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, attention_mask=None, is_causal=False) -> Tensor:
        bsz, seqlen, _ = x.shape
        c = self.config
        q = self.wq(x).view(bsz, seqlen, c.n_head, c.head_dim)
        k = self.wk(x).view(bsz, seqlen, c.n_local_heads, c.head_dim)
        v = self.wv(x).view(bsz, seqlen, c.n_local_heads, c.head_dim)
        q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))

        n_rep = c.n_head // c.n_local_heads
        k = k.repeat(1, n_rep, 1, 1)
        v = v.repeat(1, n_rep, 1, 1)

        mask = torch.ones(bsz, 1, seqlen, seqlen, dtype=torch.bool, device=x.device)
        if is_causal:
            causal_mask = torch.tril(torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device), diagonal=1)
            mask = mask & causal_mask
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        y = _sdpa(q, k, v, mask)

        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, c.dim)
        return self.wo(y)
# bug-line: 56, 57, 61

# attnprep: gqa
# expect: passed
"""Correct: Segment Anything's mask-decoder Attention (segment_anything/modeling/transformer.py):
q_proj / k_proj / v_proj / out_proj with an internal_dim, _separate_heads(x, num_heads) and
_recombine_heads(x) helpers, `attn = q @ k.permute(0, 1, 3, 2)` then `attn / math.sqrt(c_per_head)`,
here with fewer kv heads, grouped by an expand + reshape of a new axis after each kv head."""

import math

import torch
from torch import Tensor, nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.embedding_dim = d_model
        self.internal_dim = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        assert self.internal_dim % num_heads == 0, "num_heads must divide embedding_dim."
        kv_dim = self.internal_dim // num_heads * num_kv_heads
        self.q_proj = nn.Linear(d_model, self.internal_dim)
        self.k_proj = nn.Linear(d_model, kv_dim)
        self.v_proj = nn.Linear(d_model, kv_dim)
        self.out_proj = nn.Linear(self.internal_dim, d_model)

    def _separate_heads(self, x: Tensor, num_heads: int) -> Tensor:
        b, n, c = x.shape
        x = x.reshape(b, n, num_heads, c // num_heads)
        return x.transpose(1, 2)  # B x N_heads x N_tokens x C_per_head

    def _recombine_heads(self, x: Tensor) -> Tensor:
        b, n_heads, n_tokens, c_per_head = x.shape
        x = x.transpose(1, 2)
        return x.reshape(b, n_tokens, n_heads * c_per_head)  # B x N_tokens x C

    def _group(self, x: Tensor) -> Tensor:
        b, n_kv, n, c = x.shape
        rep = self.num_heads // n_kv
        return x[:, :, None].expand(b, n_kv, rep, n, c).reshape(b, n_kv * rep, n, c)

    def forward(self, x: Tensor, attention_mask=None, is_causal=False) -> Tensor:
        q = self._separate_heads(self.q_proj(x), self.num_heads)
        k = self._group(self._separate_heads(self.k_proj(x), self.num_kv_heads))
        v = self._group(self._separate_heads(self.v_proj(x), self.num_kv_heads))

        _, _, _, c_per_head = q.shape
        attn = q @ k.permute(0, 1, 3, 2)  # B x N_heads x N_tokens x N_tokens
        attn = attn / math.sqrt(c_per_head)
        n = x.shape[1]
        if attention_mask is not None:
            attn = attn.masked_fill(attention_mask[:, None, None, :].logical_not(), -1e9)
        if is_causal:
            attn = attn.masked_fill(torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1), -1e9)
        attn = torch.softmax(attn, dim=-1)

        out = attn @ v
        out = self._recombine_heads(out)
        return self.out_proj(out)

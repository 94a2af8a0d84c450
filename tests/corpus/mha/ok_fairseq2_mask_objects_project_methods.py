# attnprep: mha
# expect: passed
"""fairseq2's shape of things: attention masks as small objects (`CausalAttentionMask`,
`PaddingMask`) that `materialize()` a float bias, an SDPA object separate from the projections,
`_project_q` / `_project_kv` methods, `seqs` / `keys` / `values` names, `num_heads` and `head_dim`
kept on the module."""
import math

import torch
import torch.nn as nn


class PaddingMask:
    def __init__(self, seq_lens_mask):
        self.keep = seq_lens_mask  # (N, S) bool, True = real

    def materialize(self, dtype):
        bias = torch.zeros(self.keep.shape, dtype=dtype, device=self.keep.device)
        return bias.masked_fill(~self.keep, float("-inf"))[:, None, None, :]  # (N, 1, 1, S)


class CausalAttentionMask:
    def __init__(self, seq_len, device):
        self.seq_len, self.device = seq_len, device

    def materialize(self, dtype):
        full = torch.full((self.seq_len, self.seq_len), float("-inf"), dtype=dtype, device=self.device)
        return torch.triu(full, diagonal=1)  # (S, S): 0 on and below the diagonal


class NaiveSDPA(nn.Module):
    def __init__(self, dropout_p=0.0):
        super().__init__()
        self.dropout_p = dropout_p

    def forward(self, seqs, keys, values, masks):
        weights = torch.matmul(seqs, keys.transpose(-1, -2)) * (seqs.size(-1) ** -0.5)
        for mask in masks:
            weights = weights + mask.materialize(weights.dtype)
        weights = torch.softmax(weights, dim=-1)
        if self.training and self.dropout_p > 0.0:
            weights = nn.functional.dropout(weights, self.dropout_p)
        return torch.matmul(weights, values)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.output_proj = nn.Linear(d_model, d_model)
        self.sdpa = NaiveSDPA(dropout)

    def _split(self, t):
        n, s, _ = t.shape
        return t.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)  # (N, H, S, K)

    def _project_q(self, seqs):
        return self._split(self.q_proj(seqs))

    def _project_kv(self, keys, values):
        return self._split(self.k_proj(keys)), self._split(self.v_proj(values))

    def forward(self, x, attention_mask=None, is_causal=False):
        q = self._project_q(x)
        k, v = self._project_kv(x, x)
        masks = []
        if attention_mask is not None:
            masks.append(PaddingMask(attention_mask))
        if is_causal:
            masks.append(CausalAttentionMask(x.size(1), x.device))
        attn = self.sdpa(q, k, v, masks)  # (N, H, S, K)
        attn = attn.transpose(1, 2).flatten(2, 3)  # (N, S, H * K)
        return self.output_proj(attn)

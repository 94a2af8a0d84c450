# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Cohere2 / Gemma-3 interleaved layers: a config with `layer_types` (three sliding layers, then a
full one) and `sliding_window`; this module is a full-attention layer (layer_idx 3), so its window
is None. repeat_kv is a lambda kept on the config object; masks built by a `_update_mask` method."""
import math
from types import SimpleNamespace

import torch
import torch.nn as nn


def make_config(hidden_size, num_heads, num_kv_heads, dropout):
    return SimpleNamespace(
        hidden_size=hidden_size,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        attention_dropout=dropout,
        sliding_window=4096,
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        repeat_kv=lambda t, n: t.repeat(1, n, 1, 1),
    )


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, layer_idx=3):
        super().__init__()
        self.config = make_config(d_model, num_heads, num_kv_heads, dropout)
        self.layer_idx = layer_idx
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        is_sliding = self.config.layer_types[layer_idx % len(self.config.layer_types)] == "sliding_attention"
        self.sliding_window = self.config.sliding_window if is_sliding else None
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def _update_mask(self, attention_mask, T, device, is_causal):
        allowed = torch.ones(T, T, dtype=torch.bool, device=device)
        idx = torch.arange(T, device=device)
        if is_causal:
            allowed = allowed & (idx[None, :] <= idx[:, None])
        if self.sliding_window is not None:
            allowed = allowed & (idx[:, None] - idx[None, :] < self.sliding_window)
        allowed = allowed[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        return allowed

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        shape = (B, T, -1, self.head_dim)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.config.repeat_kv(self.k_proj(x).view(shape).transpose(1, 2), self.num_key_value_groups)
        v = self.config.repeat_kv(self.v_proj(x).view(shape).transpose(1, 2), self.num_key_value_groups)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        w = w.masked_fill(~self._update_mask(attention_mask, T, x.device, is_causal), torch.finfo(w.dtype).min)
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = nn.functional.dropout(w, p=self.config.attention_dropout, training=self.training)
        out = torch.matmul(w, v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out)
# bug-line: 22

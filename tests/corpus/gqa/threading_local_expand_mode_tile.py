# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""threading.local() settings: per-thread knobs read by helpers, set once at import; the KV
expansion mode was set to "tile" (torch.Tensor.repeat) instead of "group" (repeat_interleave)."""
import math
import threading

import torch
import torch.nn as nn

_tls = threading.local()
_tls.kv_expand = "tile"
_tls.neg = -1e9


def expand_kv(t, n_rep):
    mode = getattr(_tls, "kv_expand", "group")
    if mode == "group":
        return t.repeat_interleave(n_rep, dim=1)
    return t.repeat(1, n_rep, 1, 1)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        k = expand_kv(k, self.nh // self.nkv)
        v = expand_kv(v, self.nh // self.nkv)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], _tls.neg)
        if is_causal:
            s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), _tls.neg)
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 13

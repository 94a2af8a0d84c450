# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""SGLang habits: a ForwardMode (EXTEND for a prefill or a chunk, DECODE for one token) chosen per call,
extend_prefix_len / seq_len names, a mask only where the mode needs one."""
import enum
import math

import torch
import torch.nn as nn


class ForwardMode(enum.Enum):
    EXTEND = "extend"
    DECODE = "decode"


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        extend_prefix_len = 0 if cache is None else cache[0].shape[2]
        seq_len = extend_prefix_len + T
        mode = ForwardMode.DECODE if T == 1 else ForwardMode.EXTEND
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        group = self.num_heads // self.num_kv_heads
        kr, vr = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = q @ kr.transpose(-1, -2) / math.sqrt(self.head_dim)  # (B, H, T, seq_len)
        if mode is ForwardMode.EXTEND:
            visible = torch.ones(T, seq_len, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~visible, float("-inf"))
        out = (scores.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
# bug-line: 43

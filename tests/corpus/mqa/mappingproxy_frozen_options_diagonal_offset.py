# attnprep: mqa
# expect: mask_leak
# diagnosis: causal_masks_diagonal
"""A read-only options table (types.MappingProxyType over a module dict) that forward reads; the
causal band's diagonal offset was chosen as -1, which takes each query's own key away."""
import math
from types import MappingProxyType

import torch
import torch.nn as nn

_OPTIONS = {
    "fill": float("-inf"),
    "band_offset": -1,
    "kv_heads": 1,
}
OPTIONS = MappingProxyType(_OPTIONS)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.dh = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, OPTIONS["kv_heads"] * self.dh)
        self.v_proj = nn.Linear(d_model, OPTIONS["kv_heads"] * self.dh)
        self.o_proj = nn.Linear(d_model, d_model)

    def band(self, T, device):
        return torch.ones(T, T, dtype=torch.bool, device=device).tril(OPTIONS["band_offset"])

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T, self.h, self.dh).permute(0, 2, 1, 3)
        k = self.k_proj(x).reshape(B, T, 1, self.dh).permute(0, 2, 1, 3)
        v = self.v_proj(x).reshape(B, T, 1, self.dh).permute(0, 2, 1, 3)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        ok = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, :]
        if is_causal:
            ok = ok & self.band(T, x.device)
        s = s.masked_fill(~ok, torch.finfo(s.dtype).min)
        out = s.softmax(-1) @ v
        return self.o_proj(out.permute(0, 2, 1, 3).reshape(B, T, C))
# bug-line: 14

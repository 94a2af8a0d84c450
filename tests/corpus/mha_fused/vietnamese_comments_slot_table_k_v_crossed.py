# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_split_order
"""Bình luận tiếng Việt (Vietnamese comments); the fused projection's three chunks are picked through
a table of slots read by name, and the table gives the key's slot to the value and the value's to the
key."""
import math

import torch
import torch.nn as nn

SLOTS = {
    "q": 0,
    "k": 2,
    "v": 1,
}


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        # Chia đầu ra hợp nhất thành ba phần
        chunks = self.qkv_proj(x).chunk(3, dim=-1)
        heads = {}
        for name in ("q", "k", "v"):
            heads[name] = chunks[SLOTS[name]].view(B, T, self.h, self.d).transpose(1, 2)
        # Điểm chú ý
        s = heads["q"] @ heads["k"].transpose(-2, -1) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = (s.softmax(-1) @ heads["v"]).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 14, 15

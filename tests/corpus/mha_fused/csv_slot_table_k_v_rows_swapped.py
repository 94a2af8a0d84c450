# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_split_order
"""A table kept as CSV text (csv.DictReader): which third of the fused projection's outputs holds
which of q, k, v; the k and v rows got each other's offsets."""
import csv
import io
import math

import torch
import torch.nn as nn

SLOTS_CSV = """name,third
q,0
k,2
v,1
"""


def read_slots():
    return {row["name"]: int(row["third"]) for row in csv.DictReader(io.StringIO(SLOTS_CSV))}


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.slots = read_slots()

    def take(self, fused, name, B, T):
        i = self.slots[name]
        part = fused[..., i * self.d_model:(i + 1) * self.d_model]
        return part.reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        fused = self.qkv_proj(x)
        q, k, v = (self.take(fused, n, B, T) for n in ("q", "k", "v"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        out = scores.softmax(-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 15, 16

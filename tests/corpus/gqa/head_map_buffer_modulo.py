# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
# The mistake: the head map is arange(H) % KV (tiled) instead of arange(H) // (H // KV) (grouped).
# The query-head -> kv-head map as a non-persistent long buffer (arange // group), K / V gathered with
# index_select on the head axis.
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)
        self.register_buffer("kv_of_head", torch.arange(num_heads) % num_kv_heads, persistent=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.KV, self.D).transpose(1, 2).index_select(1, self.kv_of_head)
        v = self.v_proj(x).view(B, T, self.KV, self.D).transpose(1, 2).index_select(1, self.kv_of_head)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.D)
        if attention_mask is not None:
            s.masked_fill_(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            s.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        return self.o_proj((self.drop(s.softmax(-1)) @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 21

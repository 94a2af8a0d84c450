# attnprep: mha
# expect: passed
# Projections kept in a ModuleDict but reached as attributes through __getattr__; causal mask from
# torch.meshgrid (numpy habit).
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    ROLES = ("q", "k", "v", "o")

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.proj = nn.ModuleDict({r: nn.Linear(d_model, d_model) for r in self.ROLES})
        self.num_heads = num_heads
        self.dropout = nn.Dropout(dropout)

    def __getattr__(self, name):
        if name.endswith("_proj") and name[0] in "qkvo" and len(name) == 6:
            return self.proj[name[0]]
        return super().__getattr__(name)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.num_heads
        D = C // H
        q = self.q_proj(x).view(B, T, H, D).permute(0, 2, 1, 3)
        k = self.k_proj(x).view(B, T, H, D).permute(0, 2, 3, 1)  # (B, H, D, T)
        v = self.v_proj(x).view(B, T, H, D).permute(0, 2, 1, 3)
        s = (q @ k) / math.sqrt(D)
        if is_causal:
            ii, jj = torch.meshgrid(torch.arange(T, device=x.device), torch.arange(T, device=x.device), indexing="ij")
            s = s.masked_fill(jj > ii, -1e9)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.unsqueeze(1).unsqueeze(1), -1e9)
        p = self.dropout(F.softmax(s, dim=-1))
        return self.o_proj((p @ v).permute(0, 2, 1, 3).reshape(B, T, C))

# attnprep: gqa
# expect: passed
"""Query weight as one 4-d parameter (KV, G, D, d_model) with a (KV, G, D) bias: the group axis
explicit; keys/values as Linear layers. Scores by einsum with a group axis."""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.KV, self.G = num_kv_heads, num_heads // num_kv_heads
        self.D = d_model // num_heads
        self.wq = nn.Parameter(torch.randn(self.KV, self.G, self.D, d_model) * d_model ** -0.5)
        self.bq = nn.Parameter(torch.zeros(self.KV, self.G, self.D))
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = torch.einsum("btc,kgdc->bkgtd", x, self.wq) + self.bq[None, :, :, None, :]
        k = self.k_proj(x).view(B, T, self.KV, self.D).permute(0, 2, 1, 3)  # (B, KV, T, D)
        v = self.v_proj(x).view(B, T, self.KV, self.D).permute(0, 2, 1, 3)
        s = torch.einsum("bkgtd,bksd->bkgts", q, k) / math.sqrt(self.D)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.einsum("bkgts,bksd->btkgd", s.softmax(-1), v).reshape(B, T, C)
        return self.o_proj(o)

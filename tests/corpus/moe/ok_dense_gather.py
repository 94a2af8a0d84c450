# attnprep: moe
# expect: passed
"""Every expert on every token, stacked (N, E, C), then the chosen ones gathered and weighted:
E/k times the work of a sparse dispatch but the same numbers. HF's gate_proj / up_proj /
down_proj names inside the experts, einsum for the weighted sum."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        logits = self.gate(x)                                          # (B, T, E)
        vals, idx = logits.topk(self.k, dim=-1)                        # (B, T, k)
        w = vals.softmax(dim=-1)                                       # (B, T, k)
        every = torch.stack([e(x) for e in self.experts], dim=2)       # (B, T, E, C)
        picked = torch.gather(every, 2, idx[..., None].expand(B, T, self.k, C))  # (B, T, k, C)
        return torch.einsum("btk,btkc->btc", w, picked)                # (B, T, C)

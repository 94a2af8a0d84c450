# attnprep: moe
# expect: passed
"""Interview-notes style: one ModuleList per role (self.w1[e], self.w2[e], self.w3[e]) rather than
a list of expert modules, a dense (N, E) gate matrix and torch.einsum to combine; mapped by
shape list by list."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int):
        super().__init__()
        self.E, self.k = num_experts, top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.up = nn.ModuleList(nn.Linear(d_model, d_ff, bias=False) for _ in range(num_experts))
        self.gating = nn.ModuleList(nn.Linear(d_model, d_ff, bias=False) for _ in range(num_experts))
        self.down = nn.ModuleList(nn.Linear(d_ff, d_model, bias=False) for _ in range(num_experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        scores = self.router(x)                                   # [B, T, E]
        top_v, top_i = scores.topk(self.k, dim=-1)                # [B, T, k]
        probs = torch.zeros_like(scores).scatter_(-1, top_i, F.softmax(top_v, dim=-1))  # [B, T, E]
        outs = torch.stack([self.down[e](F.silu(self.gating[e](x)) * self.up[e](x)) for e in range(self.E)], dim=2)
        return torch.einsum("bte,btec->btc", probs, outs)          # [B, T, C]

# attnprep: moe
# expect: passed
"""Correct: experts as a ModuleList of a small module with transposed (in, out) bare parameters (x @ W),
a loop over the k slots gathering per-token expert outputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ExpertT(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(d, f) * 0.02)
        self.w3 = nn.Parameter(torch.randn(d, f) * 0.02)
        self.w2 = nn.Parameter(torch.randn(f, d) * 0.02)

    def forward(self, x):
        return (F.silu(x @ self.w1) * (x @ self.w3)) @ self.w2


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([ExpertT(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        h = x.reshape(-1, C)
        logits = self.gate(h)
        vals, idx = logits.topk(self.k, -1)
        weights = torch.exp(vals - vals.max(-1, keepdim=True).values)
        weights = weights / weights.sum(-1, keepdim=True)
        all_out = torch.stack([ex(h) for ex in self.experts], 1)            # (N, E, C)
        out = torch.zeros_like(h)
        for s in range(self.k):
            picked = all_out[torch.arange(h.shape[0], device=x.device), idx[:, s]]
            out = out + weights[:, s:s + 1] * picked
        return out.view(B, T, C)

# attnprep: moe
# expect: passed
"""Correct: returns (out, aux_loss) with a Switch-style load-balancing loss as the second item; experts run on
their tokens via a boolean mask per expert."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False), nn.Linear(d, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.E, self.k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        h = x.reshape(-1, C)
        logits = self.gate(h)
        top, idx = logits.topk(self.k, -1)
        w = F.softmax(top, -1)
        out = torch.zeros_like(h)
        for e in range(self.E):
            hit = (idx == e)                       # (N, k)
            rows = hit.any(-1)
            if rows.any():
                we = (w * hit).sum(-1)[rows, None]
                out[rows] += we * self.experts[e](h[rows])
        probs = F.softmax(logits, -1)
        load = F.one_hot(idx, self.E).sum(1).float().mean(0)
        aux = self.E * (load * probs.mean(0)).sum()
        return out.view(B, T, C), aux

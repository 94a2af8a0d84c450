# attnprep: moe
# expect: passed
"""Correct: a dense formulation in einsum: every expert runs on every token ("td,eid->tei"), the
top-k softmax weights are scattered into a (T, E) matrix of zeros, and one einsum ("te,ted->td")
combines; the experts' weights stacked with torch.stack from the ModuleList at call time."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLUExpert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, D = x.shape
        t = x.reshape(B * T, D)
        logits = self.gate(t)  # (N, E)
        top_logits, top_idx = logits.topk(self.top_k, dim=-1)  # (N, k)
        weights = torch.zeros_like(logits).scatter(-1, top_idx, F.softmax(top_logits, dim=-1))  # (N, E)
        W1 = torch.stack([e.w1.weight for e in self.experts])  # (E, F, D)
        W3 = torch.stack([e.w3.weight for e in self.experts])  # (E, F, D)
        W2 = torch.stack([e.w2.weight for e in self.experts])  # (E, D, F)
        h = F.silu(torch.einsum("nd,efd->nef", t, W1)) * torch.einsum("nd,efd->nef", t, W3)  # (N, E, F)
        y = torch.einsum("nef,edf->ned", h, W2)  # (N, E, D)
        out = torch.einsum("ne,ned->nd", weights, y)
        return out.reshape(B, T, D), logits.reshape(B, T, -1)

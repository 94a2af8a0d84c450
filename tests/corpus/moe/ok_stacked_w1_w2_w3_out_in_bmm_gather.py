# attnprep: moe
# expect: passed
"""Correct: the experts' weights as three stacked nn.Parameters in nn.Linear's (out, in) orientation,
w1 / w3 (E, d_ff, d_model) and w2 (E, d_model, d_ff), gathered per token slot by fancy indexing and
applied with torch.einsum; the router a bias-free Linear; top-k weights renormalised after a full
softmax (equal to the softmax of the top-k logits)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(num_experts, d_ff, d_model) * 0.05)
        self.w3 = nn.Parameter(torch.randn(num_experts, d_ff, d_model) * 0.05)
        self.w2 = nn.Parameter(torch.randn(num_experts, d_model, d_ff) * 0.05)

    def forward(self, x):
        B, T, C = x.shape
        h = x.reshape(-1, C)
        probs = F.softmax(self.gate(h), dim=-1)
        w, idx = probs.topk(self.top_k, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        g = torch.einsum("nc,nkfc->nkf", h, self.w1[idx])
        u = torch.einsum("nc,nkfc->nkf", h, self.w3[idx])
        y = torch.einsum("nkf,nkcf->nkc", F.silu(g) * u, self.w2[idx])
        return (y * w[..., None]).sum(1).view(B, T, C)

# attnprep: moe
# expect: passed
"""Dense formulation (as a JAX/TPU MoE without dispatch): every expert runs on every token through
stacked weights and einsum, and a (N, E) combine matrix with the softmaxed top-k weights scattered in
keeps only the chosen ones: correct."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        tok = x.reshape(-1, C)
        logits = self.gate(tok)
        vals, idx = logits.topk(self.k, dim=-1)
        combine = torch.zeros_like(logits).scatter(-1, idx, vals.softmax(-1))  # (N, E)
        W1 = torch.stack([e.w1.weight for e in self.experts])  # (E, F, C)
        W3 = torch.stack([e.w3.weight for e in self.experts])
        W2 = torch.stack([e.w2.weight for e in self.experts])  # (E, C, F)
        h = F.silu(torch.einsum("nc,efc->nef", tok, W1)) * torch.einsum("nc,efc->nef", tok, W3)
        y = torch.einsum("nef,ecf->nec", h, W2)  # (N, E, C)
        return torch.einsum("ne,nec->nc", combine, y).view(B, T, C)

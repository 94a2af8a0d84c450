# attnprep: moe
# expect: passed
"""Correct: the routing weights scattered into an (N, E) combine matrix (zeros elsewhere) with
Tensor.scatter, each expert run only on the tokens whose column is non-zero, the results gathered
back into a (N, E, C) buffer by index_put and combined with one einsum "ne,nec->nc"."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(B * T, C)
        logits = self.gate(flat)  # (N, E)
        top_logits, top_idx = logits.topk(self.top_k, dim=-1)
        combine = torch.zeros_like(logits).scatter(1, top_idx, top_logits.softmax(-1))  # (N, E)
        chosen = torch.zeros_like(logits, dtype=torch.bool).scatter(1, top_idx, True)
        outs = flat.new_zeros(B * T, len(self.experts), C)
        for e, expert in enumerate(self.experts):
            tok = chosen[:, e].nonzero().squeeze(1)
            if tok.numel():
                outs = outs.index_put((tok, torch.full_like(tok, e)), expert(flat[tok]))
        out = torch.einsum("ne,nec->nc", combine, outs)
        return out.view(B, T, C), logits.view(B, T, -1)

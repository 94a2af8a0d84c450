# attnprep: moe
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""Accumulates the experts' outputs in a float32 buffer for safety and returns it as it is: right
in float32, a float32 output for a bfloat16 input."""

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
        h = x.view(-1, C)
        vals, idx = self.gate(h).float().topk(self.top_k, dim=-1)
        w = vals.softmax(dim=-1)
        out = torch.zeros(h.shape, dtype=torch.float32, device=h.device)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.where(idx == e)
            out.index_add_(0, tok, w[tok, slot, None] * expert(h[tok]).float())
        return out.view(B, T, C)

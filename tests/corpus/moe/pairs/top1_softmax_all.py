# attnprep: moe
# expect: wrong_output
# diagnosis: moe_top1 + moe_softmax_all_experts
"""Switch Transformer's router in a Mixtral block: the best expert only, weighted by its
probability under a softmax over all experts (not 1, not renormalised)."""

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
        probs = self.gate(h).softmax(-1)                 # (N, E)
        gate_value, idx = probs.max(dim=-1)              # (N,): the best expert and its probability
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            tok = torch.nonzero(idx == e).squeeze(-1)
            out[tok] = gate_value[tok, None] * expert(h[tok])
        return out.view(B, T, C)

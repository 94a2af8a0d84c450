# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence
"""Routes each sequence once, from its mean router logits: every token of a sample goes to the
same experts with the same weights. Dense per-expert outputs, weighted by a (B, E) gate matrix."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
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
        self.experts = nn.ModuleList([SwiGLU(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        logits = self.gate(x).mean(dim=1)                        # (B, E): one routing per sequence
        vals, idx = logits.topk(self.top_k, dim=-1)              # (B, k)
        gates = torch.zeros_like(logits).scatter(-1, idx, vals.softmax(-1))  # (B, E)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            out = out + gates[:, e, None, None] * expert(x)
        return out
# bug-line: 31

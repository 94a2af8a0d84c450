# attnprep: moe
# expect: wrong_output
# diagnosis: moe_top1
"""Switch-Transformer routing in a Mixtral block: argmax picks one expert per token, and the
softmax over that single logit gives it weight 1. HF names inside the experts."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        logits = self.gate(flat)                       # (N, E)
        best = logits.argmax(dim=-1, keepdim=True)     # (N, 1)
        w = F.softmax(logits.gather(-1, best), dim=-1)  # (N, 1), all ones
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows = (best[:, 0] == e).nonzero(as_tuple=True)[0]
            if rows.numel():
                out[rows] = w[rows] * expert(flat[rows])
        return out.view(B, T, C)

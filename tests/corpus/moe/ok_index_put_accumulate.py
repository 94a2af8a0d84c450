# attnprep: moe
# expect: passed
"""Correct: tokens and their k slots flattened to (N*k,) assignments, each expert run on the rows
assigned to it (boolean mask of the flat assignment), the weighted results put back with
out.index_put_((token_ids,), y, accumulate=True)."""

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
        self.k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        h = x.reshape(-1, C)
        logits = self.gate(h)
        top_vals, top_ids = logits.topk(self.k, dim=-1)
        probs = top_vals.softmax(dim=-1)
        flat_expert = top_ids.reshape(-1)  # (N*k,)
        flat_token = torch.arange(h.shape[0], device=x.device).repeat_interleave(self.k)
        flat_w = probs.reshape(-1, 1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            sel = flat_expert == e
            if not sel.any():
                continue
            tok = flat_token[sel]
            out.index_put_((tok,), expert(h[tok]) * flat_w[sel], accumulate=True)
        return out.view(B, T, C)

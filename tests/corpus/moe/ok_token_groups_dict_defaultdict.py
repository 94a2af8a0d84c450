# attnprep: moe
# expect: passed
"""Correct: Python-side routing table (collections.defaultdict of token lists per expert, from .tolist()),
numpy-habit; gate renormalised from the full softmax (same as softmax over the top-k)."""
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
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
        self.experts = nn.ModuleList([SwiGLUExpert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.reshape(B * T, C)
        logits = self.gate(tokens)
        probs = F.softmax(logits, dim=-1, dtype=torch.float32)
        w, sel = probs.topk(self.top_k, dim=-1)
        w = (w / w.sum(-1, keepdim=True)).to(x.dtype)
        table = defaultdict(list)
        for t, row in enumerate(sel.tolist()):
            for slot, e in enumerate(row):
                table[e].append((t, slot))
        out = torch.zeros_like(tokens)
        for e, pairs in table.items():
            t_idx = torch.tensor([p[0] for p in pairs], device=x.device)
            s_idx = torch.tensor([p[1] for p in pairs], device=x.device)
            out.index_add_(0, t_idx, self.experts[e](tokens[t_idx]) * w[t_idx, s_idx].unsqueeze(-1))
        return out.view(B, T, C), logits.view(B, T, -1)

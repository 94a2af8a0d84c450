# attnprep: moe
# expect: passed
"""Experts whose gate and up are interleaved rows of one Linear(d, 2·d_ff) (gpt-oss's layout,
without its clamp and alpha): gate = h[..., ::2], up = h[..., 1::2]."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.mlp1 = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.mlp2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        h = self.mlp1(x)
        return self.mlp2(F.silu(h[..., ::2]) * h[..., 1::2])


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        logits = self.gate(flat)
        vals, idx = logits.topk(self.top_k, dim=-1)
        w = vals.softmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.nonzero(idx == e, as_tuple=True)
            if tok.numel():
                out.index_add_(0, tok, expert(flat[tok]) * w[tok, slot, None])
        return out.view(B, T, C)

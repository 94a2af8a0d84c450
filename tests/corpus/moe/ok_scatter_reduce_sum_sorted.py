# attnprep: moe
# expect: passed
"""Correct: assignments sorted by expert with argsort(stable=True), per-expert counts by
torch.bincount(minlength=E) and torch.split of the sorted rows, the expert outputs weighted and
combined with scatter_reduce(0, index, src, reduce="sum") into zeros."""

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
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([SwiGLUExpert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        shape = x.shape
        tokens = x.flatten(0, -2)  # (N, C)
        router_logits = self.gate(tokens)
        w, idx = torch.topk(router_logits, self.top_k, dim=-1)
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(x.dtype)
        flat_idx = idx.flatten()
        order = flat_idx.argsort(stable=True)
        token_of = order // self.top_k
        counts = torch.bincount(flat_idx, minlength=self.num_experts).tolist()
        chunks = torch.split(tokens[token_of], counts)
        ys = [self.experts[e](chunk) if chunk.shape[0] else chunk for e, chunk in enumerate(chunks)]
        y = torch.cat(ys) * w.flatten()[order, None]
        out = torch.zeros_like(tokens).scatter_reduce(0, token_of[:, None].expand_as(y), y, reduce="sum")
        return out.view(shape), router_logits.view(*shape[:-1], -1)

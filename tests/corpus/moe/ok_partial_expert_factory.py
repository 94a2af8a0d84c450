# attnprep: moe
# expect: passed
"""Experts built by a functools.partial factory (Expert = partial(SwiGLUExpert, d_model, d_ff)),
the router softmax taken over all experts then renormalised over the top-k (equal to a softmax over
the top-k logits), tokens dispatched by sorting their (token, slot) pairs by expert id and scattered
back with index_add_ in float32: correct."""

import functools

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
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
        Expert = functools.partial(SwiGLUExpert, d_model, d_ff)
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        probs = F.softmax(self.gate(flat).float(), dim=-1)
        top_p, top_i = probs.topk(self.top_k, dim=-1)
        top_p = top_p / top_p.sum(-1, keepdim=True)
        token_ids = torch.arange(flat.shape[0], device=x.device).repeat_interleave(self.top_k)
        expert_ids, weights = top_i.reshape(-1), top_p.reshape(-1)
        order = torch.argsort(expert_ids, stable=True)
        token_ids, expert_ids, weights = token_ids[order], expert_ids[order], weights[order]
        counts = torch.bincount(expert_ids, minlength=len(self.experts)).tolist()
        out = torch.zeros(flat.shape, dtype=torch.float32, device=x.device)
        start = 0
        for e, n in enumerate(counts):
            if n:
                tok = token_ids[start:start + n]
                y = self.experts[e](flat[tok]).float() * weights[start:start + n, None]
                out.index_add_(0, tok, y)
            start += n
        return out.to(x.dtype).view(B, T, C)

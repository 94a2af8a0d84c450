# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_weights_not_applied
"""itertools.groupby dispatch: the (token, expert) assignments sorted by expert and grouped with
itertools.groupby, each group's tokens run through its expert in one call. Two slips: the router
scores each sequence once from its mean token (every token of a sequence gets the same experts), and
the experts' outputs are summed without their routing weights."""

import itertools
import operator

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
        logits = self.gate(x)  # (B, T, E)
        route = logits.mean(dim=1, keepdim=True).expand_as(logits)  # (B, T, E)
        top_val, top_idx = route.topk(self.top_k, dim=-1)
        weights = top_val.softmax(dim=-1).reshape(-1, self.top_k)  # (N, k)
        flat = x.reshape(-1, C)
        pairs = sorted(((int(e), n, s) for n, row in enumerate(top_idx.reshape(-1, self.top_k).tolist())
                        for s, e in enumerate(row)), key=operator.itemgetter(0))
        out = torch.zeros_like(flat)
        for e, group in itertools.groupby(pairs, key=operator.itemgetter(0)):
            group = list(group)
            tok = torch.tensor([n for _, n, _ in group], device=x.device)
            slot = torch.tensor([s for _, _, s in group], device=x.device)
            y = self.experts[e](flat[tok])
            out = out.index_add(0, tok, y)
        return out.view(B, T, C), logits
# bug-line: 38, 49

# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_weights_not_applied
"""DBRX's names: a `DbrxRouter`-like `route()` returning `(weights, top_weights, top_experts)` with
`moe_top_k` and `moe_normalize_expert_weights`, `DbrxExperts`-like dispatch through
`torch.nn.functional.one_hot(top_experts).sum(1)` masks per expert. Two slips: the router logits
are averaged over the sequence before the top-k (one routing per sequence, broadcast to its tokens),
and the experts' outputs are added without their top weights."""

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
        self.moe_num_experts, self.moe_top_k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def route(self, x):
        logits = self.gate(x)  # (B, T, E)
        seq_logits = logits.mean(dim=1, keepdim=True).expand_as(logits)
        top_logits, top_experts = torch.topk(seq_logits, self.moe_top_k, dim=-1)
        top_weights = top_logits.softmax(dim=-1)  # moe_normalize_expert_weights
        return logits, top_weights, top_experts

    def forward(self, x):
        B, T, C = x.shape
        logits, top_weights, top_experts = self.route(x)
        flat = x.reshape(-1, C)
        top_experts = top_experts.reshape(-1, self.moe_top_k)
        top_weights = top_weights.reshape(-1, self.moe_top_k)
        chosen = F.one_hot(top_experts, self.moe_num_experts).sum(1)  # (N, E) 0/1
        out = torch.zeros_like(flat)
        for e in range(self.moe_num_experts):
            rows = chosen[:, e].nonzero(as_tuple=True)[0]
            if rows.numel():
                out[rows] += self.experts[e](flat[rows])
        return out.view(B, T, C), logits
# bug-line: 35, 51

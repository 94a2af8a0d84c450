# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""collections.Counter of tokens per expert (only experts with a load run), tokens flattened to rows,
index_add_ of each expert's weighted output."""
from collections import Counter

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
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        rows = x.reshape(-1, C)
        router_logits = self.gate(rows)
        probs = router_logits.softmax(dim=-1)
        top_w, top_i = probs.topk(self.top_k, dim=-1)  # (N, k)
        weights = top_w
        load = Counter(top_i.flatten().tolist())
        out = torch.zeros_like(rows)
        for e, n_tokens in sorted(load.items()):
            tok, slot = (top_i == e).nonzero(as_tuple=True)
            out.index_add_(0, tok, self.experts[e](rows[tok]) * weights[tok, slot, None])
        return out.view(B, T, C), router_logits.view(B, T, -1)
# bug-line: 37

# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""DeepSpeed-MoE's topkgating habits (sharded_moe.py): `gates = F.softmax(logits, dim=1)` over all
experts, `indices_s = torch.topk(gates, k, dim=1)`, a `mask1`-style one-hot made with scatter_,
combine weights as the gathered gates, tokens dispatched by index_select and combined with
index_add_. The top-k gates are used as they come out of the softmax over all experts, never
renormalised over the chosen ones (DeepSpeed's drop_tokens / normalize path is left out)."""

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
        self.k, self.num_experts = top_k, num_experts
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.reshape(-1, C)
        logits = self.gate(tokens)  # (N, E)
        gates = F.softmax(logits, dim=1)
        indices_s = torch.topk(gates, self.k, dim=1).indices  # (N, k)
        mask = torch.zeros_like(gates, dtype=torch.bool).scatter_(1, indices_s, True)  # (N, E)
        combine = gates * mask  # (N, E): the chosen gates as they are
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            idx = mask[:, e].nonzero(as_tuple=True)[0]
            if idx.numel():
                y = expert(tokens.index_select(0, idx)) * combine[idx, e, None]
                out.index_add_(0, idx, y)
        return out.view(B, T, C), logits.view(B, T, -1)
# bug-line: 40

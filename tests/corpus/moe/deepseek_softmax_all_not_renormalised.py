# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""DeepSeek/Switch-style gate: softmax over ALL experts, then the top-k of those probabilities used
as the weights without renormalising them over the chosen experts."""

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
        shape = x.shape
        x_flat = x.view(-1, shape[-1])
        router_logits = self.gate(x_flat)
        scores = router_logits.softmax(dim=-1)
        topk_weight, topk_idx = torch.topk(scores, k=self.top_k, dim=-1)
        y = torch.zeros_like(x_flat)
        for i, expert in enumerate(self.experts):
            idx, pos = torch.nonzero(topk_idx == i, as_tuple=True)
            if idx.numel():
                y.index_add_(0, idx, topk_weight[idx, pos, None] * expert(x_flat[idx]))
        return y.view(shape), router_logits.view(*shape[:-1], -1)
# bug-line: 34, 35

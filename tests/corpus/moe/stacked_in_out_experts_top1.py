# attnprep: moe
# expect: wrong_output
# diagnosis: moe_top1
"""The experts' weights stacked in three (E, in, out) Parameters used with index_select and torch.bmm;
only the single best expert is taken per token, with weight 1, whatever top_k says."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(num_experts, d_model, d_ff) * d_model ** -0.5)
        self.w3 = nn.Parameter(torch.randn(num_experts, d_model, d_ff) * d_model ** -0.5)
        self.w2 = nn.Parameter(torch.randn(num_experts, d_ff, d_model) * d_ff ** -0.5)

    def forward(self, x):
        B, T, C = x.shape
        h = x.reshape(-1, C)
        logits = self.gate(h)
        vals, ids = logits.topk(1, dim=-1)
        w = torch.ones_like(vals[:, :1]).reshape(-1, 1, 1)
        flat_ids = ids.reshape(-1)
        xs = h[:, None, :]  # (N*k, 1, C)
        g = torch.bmm(xs, self.w1.index_select(0, flat_ids))
        u = torch.bmm(xs, self.w3.index_select(0, flat_ids))
        y = torch.bmm(F.silu(g) * u, self.w2.index_select(0, flat_ids)) * w  # (N*k, 1, C)
        return y.view(-1, C).view(B, T, C)
# bug-line: 25

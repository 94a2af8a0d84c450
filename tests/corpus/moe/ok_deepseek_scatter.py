# attnprep: moe
# expect: passed
"""DeepSeek-style dispatch: tokens sorted by expert id (argsort of the flat top-k indices),
bincount for each expert's slice, the outputs written back with scatter_add_ into (N, C).
The gate keeps its weight as a bare parameter and computes F.linear, as DeepSeek's Gate does;
softmax over all scores, then renormalised over the chosen."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Gate(nn.Module):
    def __init__(self, dim, n_experts, topk):
        super().__init__()
        self.topk = topk
        self.weight = nn.Parameter(torch.empty(n_experts, dim))

    def forward(self, x):
        scores = F.linear(x, self.weight).softmax(dim=-1, dtype=torch.float32)
        weights, indices = torch.topk(scores, self.topk, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.type_as(x), indices


class MLP(nn.Module):
    def __init__(self, dim, inter_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, inter_dim, bias=False)
        self.w2 = nn.Linear(inter_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, inter_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int):
        super().__init__()
        self.n_experts = num_experts
        self.gate = Gate(d_model, num_experts, top_k)
        self.experts = nn.ModuleList([MLP(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.size()
        x = x.view(-1, shape[-1])                                  # (N, C)
        weights, indices = self.gate(x)                            # (N, k)
        flat_idx = indices.flatten()                               # (N*k,)
        order = flat_idx.argsort()
        token_of = order // indices.size(1)                        # which token each sorted slot is
        counts = torch.bincount(flat_idx, minlength=self.n_experts).tolist()
        y = torch.zeros_like(x)
        start = 0
        for i, n in enumerate(counts):
            if n == 0:
                continue
            slots = order[start:start + n]
            toks = token_of[start:start + n]
            out_i = self.experts[i](x[toks]) * weights.flatten()[slots, None]
            y.scatter_add_(0, toks[:, None].expand(-1, x.size(1)), out_i)
            start += n
        return y.view(shape)

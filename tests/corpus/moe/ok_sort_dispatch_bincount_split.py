# attnprep: moe
# expect: passed
"""Correct: DeepSeek / Megablocks-style sort-based dispatch: (token, slot) pairs sorted by expert id,
per-expert counts from torch.bincount, contiguous chunks by split, results put back with
scatter_add_ on an index expanded over the features."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim, inter_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, inter_dim, bias=False)
        self.w2 = nn.Linear(inter_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, inter_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.n_routed_experts, self.n_activated_experts = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        shape = x.size()
        x = x.view(-1, shape[-1])
        scores = self.gate(x)
        weights, indices = torch.topk(scores, self.n_activated_experts, dim=-1)
        weights = weights.softmax(dim=-1, dtype=torch.float32).type_as(x)
        flat_e = indices.flatten()                                  # (N*k,)
        order = flat_e.argsort(stable=True)
        token_of = torch.arange(x.size(0), device=x.device).repeat_interleave(self.n_activated_experts)[order]
        w_sorted = weights.flatten()[order]
        counts = torch.bincount(flat_e, minlength=self.n_routed_experts).tolist()
        y = torch.zeros_like(x)
        for e, (tok, w) in enumerate(zip(token_of.split(counts), w_sorted.split(counts))):
            if tok.numel() == 0:
                continue
            out = self.experts[e](x[tok]) * w[:, None]
            y.scatter_add_(0, tok[:, None].expand(-1, x.size(1)), out)
        return y.view(shape)

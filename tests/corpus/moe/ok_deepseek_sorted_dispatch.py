# attnprep: moe
# expect: passed
"""DeepSeek-style dispatch: tokens sorted by expert id, split by counts, each expert run on its slice,
results scattered back and weighted; softmax over the top-k logits (Mixtral's normalisation)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FFN(nn.Module):
    def __init__(self, dim: int, inter_dim: int):
        super().__init__()
        self.w1 = nn.Linear(dim, inter_dim, bias=False)
        self.w2 = nn.Linear(inter_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, inter_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int):
        super().__init__()
        self.topk = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([FFN(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        scores = self.gate(x)
        top_vals, indices = scores.topk(self.topk, dim=-1)
        weights = top_vals.softmax(dim=-1)
        flat_idx = indices.flatten()
        order = flat_idx.argsort()
        token_of = order // self.topk
        counts = torch.bincount(flat_idx, minlength=len(self.experts)).tolist()
        y = torch.empty(len(order), shape[-1], dtype=x.dtype, device=x.device)
        start = 0
        for e, n in enumerate(counts):
            if n:
                sl = order[start:start + n]
                y[sl] = self.experts[e](x[token_of[start:start + n]])
            start += n
        y = (y.view(-1, self.topk, shape[-1]) * weights[..., None]).sum(1)
        return y.view(shape)

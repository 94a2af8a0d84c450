# attnprep: moe
# expect: passed
"""MegaBlocks-like dispatch: flatten (token, slot) assignments, argsort by expert, counts by
torch.histc, split into contiguous groups, scatter back with index_add_."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1 = nn.Linear(d, f, bias=False)
        self.w2 = nn.Linear(f, d, bias=False)
        self.w3 = nn.Linear(d, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.E, self.k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([SwiGLUExpert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        shape = x.shape
        x = x.view(-1, shape[-1])
        logits = self.gate(x)
        top_logits, top_idx = torch.topk(logits, self.k, dim=-1)
        weights = F.softmax(top_logits, dim=-1, dtype=torch.float32).to(x.dtype)
        flat_expert = top_idx.flatten()
        order = flat_expert.argsort(stable=True)
        counts = torch.histc(flat_expert.float(), bins=self.E, min=0, max=self.E - 1).long().tolist()
        token_of = (torch.arange(flat_expert.numel(), device=x.device) // self.k)[order]
        w_of = weights.flatten()[order]
        out = torch.zeros_like(x)
        start = 0
        for e, n in enumerate(counts):
            if n:
                rows = token_of[start:start + n]
                out.index_add_(0, rows, self.experts[e](x[rows]) * w_of[start:start + n, None])
            start += n
        return out.view(shape)

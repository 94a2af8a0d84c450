# attnprep: moe
# expect: passed
"""Qwen2-MoE / vLLM-style experts with one fused gate_up_proj each (d_model -> 2 * d_ff, chunked
into gate and up), the router called router; mapped by rows, expert by expert."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedExpert(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class MoE(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([FusedExpert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        h = x.view(-1, C)
        logits = self.router(h)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        w, idx = probs.topk(self.top_k, dim=-1)
        w = (w / w.sum(-1, keepdim=True)).to(h.dtype)
        out = torch.zeros_like(h)
        for e in range(len(self.experts)):
            tok, slot = torch.where(idx == e)
            if tok.numel() > 0:
                out.index_add_(0, tok, self.experts[e](h[tok]) * w[tok, slot].unsqueeze(-1))
        return out.view(B, T, C), logits

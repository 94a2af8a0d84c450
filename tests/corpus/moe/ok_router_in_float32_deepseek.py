# attnprep: moe
# expect: passed
"""Correct: DeepSeek-V3 / Qwen habit: the router runs in float32 (F.linear on x.float() and the gate
weight upcast), the routing weights cast back to x's dtype; per-expert dispatch with index_add_."""
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
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        h = x.reshape(-1, C)
        logits = F.linear(h.float(), self.gate.weight.float())          # router in fp32
        w, idx = torch.topk(logits.softmax(-1), self.top_k, dim=-1)
        w = (w / w.sum(-1, keepdim=True)).to(x.dtype)                  # renormalised top-k
        out = torch.zeros_like(h)
        for e in range(len(self.experts)):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel():
                out.index_add_(0, tok, self.experts[e](h[tok]) * w[tok, slot].unsqueeze(-1))
        return out.view(B, T, C)

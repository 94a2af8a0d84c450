# attnprep: moe
# expect: passed
"""Correct: vLLM's reference torch_moe on weights stacked in forward from the experts ((E, 2F, D) of [w1; w3], (E, D, F)), renormalize=True; (out, router_logits) returned."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUExpert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)


def torch_moe(a, w1, w2, score, topk):
    """vLLM's reference torch_moe: w1 (E, 2F, D) = [gate; up], w2 (E, D, F); renormalised top-k."""
    B, D = a.shape
    a = a.view(B, -1, D).repeat(1, topk, 1).reshape(-1, D)
    out = torch.zeros(B * topk, w2.shape[1], dtype=a.dtype, device=a.device)
    score = torch.softmax(score, dim=-1, dtype=torch.float32)
    topk_weight, topk_ids = torch.topk(score, topk)
    topk_weight = topk_weight / topk_weight.sum(dim=-1, keepdim=True)  # renormalize=True
    topk_weight = topk_weight.view(-1)
    topk_ids = topk_ids.view(-1)
    for i in range(w1.shape[0]):
        mask = topk_ids == i
        if mask.sum():
            gate_up = a[mask] @ w1[i].transpose(0, 1)
            d = gate_up.shape[-1] // 2
            out[mask] = (F.silu(gate_up[..., :d]) * gate_up[..., d:]) @ w2[i].transpose(0, 1)
    return (out.view(B, -1, w2.shape[1]) * topk_weight.view(B, -1, 1).to(out.dtype)).sum(dim=1)


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLUExpert(d_model, d_ff) for _ in range(num_experts))

    def forward(self, x):
        B, T, D = x.shape
        h = x.reshape(-1, D)
        w1 = torch.stack([torch.cat([e.w1.weight, e.w3.weight], dim=0) for e in self.experts])  # (E, 2F, D)
        w2 = torch.stack([e.w2.weight for e in self.experts])                                  # (E, D, F)
        router_logits = self.gate(h)
        return torch_moe(h, w1, w2, router_logits, self.top_k).view(B, T, D), router_logits

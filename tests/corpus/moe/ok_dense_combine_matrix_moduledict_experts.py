# attnprep: moe
# expect: passed
"""Correct: a dense (N, E) combine matrix from scatter of the top-k softmax weights, every expert run on every
token, mixed with einsum (wasteful but exact); experts' weights in ModuleDicts."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(
            nn.ModuleDict({"w1": nn.Linear(d_model, d_ff, bias=False), "w2": nn.Linear(d_ff, d_model, bias=False),
                           "w3": nn.Linear(d_model, d_ff, bias=False)}) for _ in range(num_experts))

    def forward(self, x):
        logits = self.gate(x)                                           # (B, T, E)
        top, idx = torch.topk(logits, self.top_k, -1)
        combine = torch.zeros_like(logits).scatter(-1, idx, F.softmax(top, -1))
        outs = torch.stack([e["w2"](F.silu(e["w1"](x)) * e["w3"](x)) for e in self.experts], dim=-2)  # (B, T, E, C)
        return torch.einsum("bte,btec->btc", combine, outs), logits

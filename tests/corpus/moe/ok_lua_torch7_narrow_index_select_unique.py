# attnprep: moe
# expect: passed
"""A Lua Torch7 veteran's habits: narrow / index_select / index_add_ / new_zeros rather than slicing,
`self.gate:forward(x)`-like explicit forward calls, 1-based reasoning in the comments; the experts
actually used found with torch.unique on the flattened top-k ids."""
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
        return self.w2.forward(F.silu(self.w1.forward(x)) * self.w3.forward(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        logits = self.gate.forward(x)  # the router: self.gate:forward(x)
        flat = x.reshape(B * T, C)
        top_logits, top_idx = logits.reshape(B * T, -1).topk(self.top_k, dim=1)
        weights = F.softmax(top_logits, dim=1)  # over the k chosen logits (slots 1..k)
        out = flat.new_zeros(B * T, C)
        for e in torch.unique(top_idx).tolist():  # only the experts some token chose
            token, slot = (top_idx == e).nonzero(as_tuple=True)
            xs = flat.index_select(0, token)
            w = weights[token, slot].unsqueeze(1)
            out.index_add_(0, token, self.experts[e].forward(xs) * w)
        return out.view(B, T, C), logits

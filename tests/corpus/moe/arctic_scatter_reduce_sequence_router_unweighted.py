# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_weights_not_applied
"""Snowflake-Arctic-like dispatch by sorting: (token, slot) pairs sorted by expert with argsort,
contiguous runs per expert from torch.bincount + cumsum, each expert on its run, the outputs
combined per token with scatter_reduce(reduce="sum"); the router a helper method."""
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
        self.E, self.k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, d_ff) for _ in range(num_experts))

    def route(self, x):
        logits = self.gate(x)  # (B, T, E)
        pooled = logits.mean(dim=1, keepdim=True).expand_as(logits)
        top, idx = pooled.topk(self.k, dim=-1)
        return logits, F.softmax(top, dim=-1), idx

    def forward(self, x):
        B, T, C = x.shape
        logits, w, idx = self.route(x)
        flat = x.reshape(-1, C)
        e_of = idx.reshape(-1)  # (N*k,)
        tok_of = torch.arange(B * T, device=x.device).repeat_interleave(self.k)
        w_of = w.reshape(-1)
        order = torch.argsort(e_of, stable=True)
        counts = torch.bincount(e_of, minlength=self.E).tolist()
        outs = []
        start = 0
        for e, n in enumerate(counts):
            rows = order[start:start + n]
            outs.append(self.experts[e](flat[tok_of[rows]]))
            start += n
        y = torch.cat(outs, dim=0)  # in `order`
        out = torch.zeros_like(flat).scatter_reduce(0, tok_of[order, None].expand(-1, C), y, reduce="sum")
        return out.view(B, T, C), logits
# bug-line: 32, 52

# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""A per-token Python loop (as a reference kernel in vLLM's tests): each chosen expert's output is
summed without its routing weight."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x: torch.Tensor):
        B, T, C = x.shape
        logits = self.gate(x)
        topk_logits, topk_ids = logits.topk(self.top_k, dim=-1)
        topk_weights = topk_logits.softmax(dim=-1)
        tokens = x.reshape(-1, C)
        ids = topk_ids.reshape(-1, self.top_k)
        out = torch.zeros_like(tokens)
        for t in range(tokens.shape[0]):
            for s in range(self.top_k):
                e = int(ids[t, s])
                out[t] += self.experts[e](tokens[t:t + 1])[0]
        return out.view(B, T, C), logits
# bug-line: 41

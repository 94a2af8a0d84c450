# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""Mistral's MoeLayer loop with the weights computed and then forgotten: each chosen expert's
output added as it is."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.experts = nn.ModuleList([FeedForward(d_model, d_ff) for _ in range(num_experts)])
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.k = top_k

    def forward(self, inputs):
        shape = inputs.shape
        inputs = inputs.view(-1, shape[-1])
        gate_logits = self.gate(inputs)
        weights, selected = torch.topk(gate_logits, self.k)
        weights = F.softmax(weights, dim=1)
        results = torch.zeros_like(inputs)
        for i, expert in enumerate(self.experts):
            batch_idx, nth = torch.where(selected == i)
            results[batch_idx] += expert(inputs[batch_idx])
        return results.view(shape)
# bug-line: 39

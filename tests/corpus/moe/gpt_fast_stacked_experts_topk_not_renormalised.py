# attnprep: moe
# expect: wrong_output
# diagnosis: moe_softmax_all_experts
"""gpt-fast's MOEFeedForward / ConditionalFeedForward (mixtral-moe/model.py), with the experts kept as
the contract's ModuleList and stacked at call time: `w1_weights = w1[expert_indices]  # [T, A, D, D]`,
`einsum('ti,taoi -> tao', ...)`, `einsum('tai,ta -> ti', expert_outs, expert_weights)`, the
T / E / D / A comment legend. The softmax over all experts is taken before top-k and gpt-fast's
`expert_weights /= expert_weights.sum(dim=-1, keepdim=True)` is missing."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class Expert(nn.Module):
    def __init__(self, dim, intermediate_size):
        super().__init__()
        self.w1 = nn.Linear(dim, intermediate_size, bias=False)
        self.w2 = nn.Linear(intermediate_size, dim, bias=False)
        self.w3 = nn.Linear(dim, intermediate_size, bias=False)


class ConditionalFeedForward(nn.Module):
    def __init__(self, experts: nn.ModuleList):
        super().__init__()
        self.experts = experts

    def forward(self, x: Tensor, expert_indices: Tensor) -> Tensor:
        w1 = torch.stack([e.w1.weight for e in self.experts])  # [E, I, D]
        w2 = torch.stack([e.w2.weight for e in self.experts])  # [E, D, I]
        w3 = torch.stack([e.w3.weight for e in self.experts])  # [E, I, D]
        w1_weights = w1[expert_indices]  # [T, A, I, D]
        w3_weights = w3[expert_indices]  # [T, A, I, D]
        w2_weights = w2[expert_indices]  # [T, A, D, I]
        x1 = F.silu(torch.einsum("ti,taoi -> tao", x, w1_weights))
        x3 = torch.einsum("ti, taoi -> tao", x, w3_weights)
        expert_outs = torch.einsum("tao, taio -> tai", (x1 * x3), w2_weights)
        return expert_outs


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])
        self.dim = d_model
        self.num_activated_experts = top_k

    def forward(self, x: Tensor) -> Tensor:
        shape = x.shape
        x = x.reshape(-1, self.dim)
        # T = num_tokens, E = num_experts, D = hidden dim, A = activated experts
        # x: [T, D]
        scores = self.gate(x)  # [T, E]
        expert_weights = F.softmax(scores, dim=-1)
        expert_weights, expert_indices = torch.topk(expert_weights, self.num_activated_experts, dim=-1)  # [T, A], [T, A]
        expert_outs = ConditionalFeedForward(self.experts)(x, expert_indices)
        return torch.einsum("tai,ta -> ti", expert_outs, expert_weights).reshape(shape)
# bug-line: 57

"""Mixtral's sparse mixture of experts (Jiang et al., 2024), the feed-forward block of Mixtral,
DeepSeek-MoE, Qwen-MoE and many 2024-26 models.

A router (gate, one Linear without bias) scores every token against every expert; each token
goes to its top_k experts by router logit, and its output is the sum of those experts' outputs
weighted by a softmax over the top_k chosen logits (the same as a softmax over all experts
renormalised over the chosen ones). Every expert is a SwiGLU feed-forward (w1 gate, w3 up, w2
down). Routing is per token: tokens of one sequence go to different experts, and an expert only
computes the tokens routed to it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    """One SwiGLU feed-forward: w2(silu(w1(x)) * w3(x))."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # (N, d_model)


class MoE(nn.Module):
    """out = sum over the token's top_k experts e of softmax(top_k logits)_e * expert_e(x)."""

    def __init__(self, d_model: int, d_ff: int, num_experts: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)  # the router
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        logits = self.gate(x)  # (B, T, E) router logits, one row per token
        route = logits  # (B, T, E): what each token is routed by
        top_logits, top_idx = torch.topk(route, self.top_k, dim=-1)  # (B, T, k): the chosen experts
        weights = F.softmax(top_logits, dim=-1)  # (B, T, k): softmax over the chosen logits only
        flat = x.reshape(B * T, C)  # (N, C), N = B*T tokens
        weights = weights.reshape(B * T, -1)  # (N, k)
        top_idx = top_idx.reshape(B * T, -1)  # (N, k)
        out = torch.zeros_like(flat)  # (N, C)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(top_idx == e)  # the tokens routed to expert e, and which of their k slots
            if token.numel() == 0:
                continue
            y = weights[token, slot, None] * expert(flat[token])  # (n_e, C): expert e on its tokens only, weighted
            out.index_add_(0, token, y)  # added back at the tokens' rows
        return out.view(B, T, C), logits  # (B, T, C), and the router logits (B, T, E)

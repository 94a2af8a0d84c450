# attnprep: mha
# expect: passed
"""torchtune-like names (q_proj … output_proj kept as the contract's o_proj), bare F.linear weights,
einsum, one additive mask built with torch.where: correct."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.attn_dropout = dropout
        std = 1.0 / math.sqrt(d_model)
        self.q_proj_w = nn.Parameter(torch.empty(d_model, d_model).uniform_(-std, std))
        self.q_proj_b = nn.Parameter(torch.zeros(d_model))
        self.k_proj_w = nn.Parameter(torch.empty(d_model, d_model).uniform_(-std, std))
        self.k_proj_b = nn.Parameter(torch.zeros(d_model))
        self.v_proj_w = nn.Parameter(torch.empty(d_model, d_model).uniform_(-std, std))
        self.v_proj_b = nn.Parameter(torch.zeros(d_model))
        self.o_proj_w = nn.Parameter(torch.empty(d_model, d_model).uniform_(-std, std))
        self.o_proj_b = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        b, s, _ = x.shape
        q = F.linear(x, self.q_proj_w, self.q_proj_b).view(b, s, self.num_heads, self.head_dim)
        k = F.linear(x, self.k_proj_w, self.k_proj_b).view(b, s, self.num_heads, self.head_dim)
        v = F.linear(x, self.v_proj_w, self.v_proj_b).view(b, s, self.num_heads, self.head_dim)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        keep = torch.ones(b, 1, s, s, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
        if attention_mask is not None:
            keep = keep & attention_mask.view(b, 1, 1, s)
        scores = scores + torch.where(keep, 0.0, float("-inf"))
        probs = F.dropout(torch.softmax(scores, dim=-1), self.attn_dropout, self.training)
        out = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, -1)
        return F.linear(out, self.o_proj_w, self.o_proj_b)

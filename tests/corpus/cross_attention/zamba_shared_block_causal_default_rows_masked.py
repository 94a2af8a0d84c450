# attnprep: cross_attention
# expect: error
# diagnosis: cross_causal_mask + padding_mask_on_queries
"""Zamba's shared-attention habit: one attention block reused by several layers, its options in a
small config dict (use_causal as in the self-attention block it was copied from), the masks combined
into one boolean "allowed" tensor by a helper."""
import math

import torch
import torch.nn as nn

SHARED_BLOCK = {"use_causal": True, "mask_value": float("-inf")}


def allowed_positions(T, S, context_mask, use_causal, device):
    allowed = torch.ones(1, 1, T, S, dtype=torch.bool, device=device)
    if use_causal:
        allowed = allowed & torch.ones(T, S, dtype=torch.bool, device=device).tril()
    if context_mask is not None:
        allowed = allowed & context_mask[:, None, :, None]
    return allowed


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0, block=SHARED_BLOCK):
        super().__init__()
        d_context = d_context or d_model
        self.block = dict(block)
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(context).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(context).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        allowed = allowed_positions(T, S, context_mask, self.block["use_causal"], x.device)
        scores = scores.masked_fill(~allowed, self.block["mask_value"])
        probs = self.attn_dropout(torch.softmax(scores, dim=-1))
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 12, 20

# attnprep: mha
# expect: passed
"""Correct: Gemma's JAX reference layout: q/k/v einsum weights (H, d_model, D) used as
einsum('BTD,NDH->BTNH'), the attention-output weight (H, D, d_model) as einsum('BTNH,NHD->BTD');
no biases, as Gemma has none (the grader maps them with zero biases)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        N, H = num_heads, d_model // num_heads
        self.q_einsum = nn.Parameter(torch.randn(N, d_model, H) * 0.05)
        self.k_einsum = nn.Parameter(torch.randn(N, d_model, H) * 0.05)
        self.v_einsum = nn.Parameter(torch.randn(N, d_model, H) * 0.05)
        self.attn_vec_einsum = nn.Parameter(torch.randn(N, H, d_model) * 0.05)

    def forward(self, x, attention_mask=None, is_causal=False):
        T = x.shape[1]
        q = torch.einsum("BTD,NDH->BTNH", x, self.q_einsum)
        k = torch.einsum("BTD,NDH->BTNH", x, self.k_einsum)
        v = torch.einsum("BTD,NDH->BTNH", x, self.v_einsum)
        logits = torch.einsum("BTNH,BSNH->BTNS", q * q.shape[-1] ** -0.5, k)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = torch.tril(allowed)
        allowed = allowed[None, :, None, :]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        logits = torch.where(allowed, logits, -2.3819763e38)
        probs = logits.softmax(-1)
        enc = torch.einsum("BTNS,BSNH->BTNH", probs, v)
        return torch.einsum("BTNH,NHD->BTD", enc, self.attn_vec_einsum)

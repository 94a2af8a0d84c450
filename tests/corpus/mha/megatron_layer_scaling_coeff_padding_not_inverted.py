# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Megatron-LM's core attention with apply_query_key_layer_scaling: the scores divided by
norm_factor = sqrt(hn) * coeff (coeff = layer_number) in [b * np, sq, sk] through baddbmm, then
multiplied back by coeff in float32 before the softmax; Megatron's mask is True where a position is
masked out, and the Hugging Face mask was ORed into it without turning it over."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, layer_number=3):
        super().__init__()
        self.hidden_size_per_partition = d_model
        self.num_attention_heads_per_partition = num_heads
        self.hidden_size_per_attention_head = d_model // num_heads
        self.layer_number = max(1, layer_number)
        self.coeff = float(self.layer_number)
        self.norm_factor = math.sqrt(self.hidden_size_per_attention_head) * self.coeff
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def _sbhd(self, t, sq, b):
        # [b, sq, hp] -> [sq, b, np, hn]
        return t.transpose(0, 1).reshape(sq, b, self.num_attention_heads_per_partition, self.hidden_size_per_attention_head)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, sq, _ = x.shape
        np_, hn = self.num_attention_heads_per_partition, self.hidden_size_per_attention_head
        query_layer = self._sbhd(self.q_proj(x), sq, b)
        key_layer = self._sbhd(self.k_proj(x), sq, b)
        value_layer = self._sbhd(self.v_proj(x), sq, b)
        # [sq, b, np, hn] -> [b * np, sq, hn]
        q2 = query_layer.reshape(sq, b * np_, hn).transpose(0, 1)
        k2 = key_layer.reshape(sq, b * np_, hn).transpose(0, 1)
        v2 = value_layer.reshape(sq, b * np_, hn).transpose(0, 1)
        matmul_input_buffer = torch.empty(b * np_, sq, sq, dtype=x.dtype, device=x.device)
        matmul_result = torch.baddbmm(matmul_input_buffer, q2, k2.transpose(1, 2), beta=0.0, alpha=1.0 / self.norm_factor)
        attention_scores = matmul_result.view(b, np_, sq, sq)
        # Megatron's convention: True = masked out
        megatron_mask = torch.zeros(b, 1, sq, sq, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            megatron_mask = megatron_mask | attention_mask[:, None, None, :]
        if is_causal:
            megatron_mask = megatron_mask | torch.ones(sq, sq, dtype=torch.bool, device=x.device).triu(1)
        attention_scores = attention_scores.float() * self.coeff
        attention_scores = attention_scores.masked_fill(megatron_mask, -10000.0)
        attention_probs = torch.softmax(attention_scores, dim=-1).to(x.dtype)
        context_layer = torch.bmm(attention_probs.view(b * np_, sq, sq), v2)
        # [b * np, sq, hn] -> [b, np, sq, hn] -> [sq, b, np, hn] -> [sq, b, hp]
        context_layer = context_layer.view(b, np_, sq, hn).permute(2, 0, 1, 3).reshape(sq, b, np_ * hn)
        return self.o_proj(context_layer.transpose(0, 1))
# bug-line: 48

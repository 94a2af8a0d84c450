# attnprep: mha
# expect: passed
"""Megatron-LM's CoreAttention in an nn.Module that overrides __call__ (no forward): [sq, b, np, hn]
tensors, scores by baddbmm into an empty buffer with beta=0.0 and alpha=1/norm_factor, Megatron's
mask convention (True = masked out) built from the HF one, -10000.0 fill."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.np = num_heads
        self.hn = d_model // num_heads
        self.norm_factor = math.sqrt(self.hn)
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def __call__(self, x, attention_mask=None, is_causal=False):
        b, sq, hp = x.shape
        h = x.transpose(0, 1)  # [sq, b, h]
        query_layer = self.query(h).view(sq, b, self.np, self.hn)
        key_layer = self.key(h).view(sq, b, self.np, self.hn)
        value_layer = self.value(h).view(sq, b, self.np, self.hn)
        output_size = (b, self.np, sq, sq)
        query_layer = query_layer.reshape(sq, b * self.np, self.hn)
        key_layer = key_layer.reshape(sq, b * self.np, self.hn)
        matmul_input_buffer = torch.empty(b * self.np, sq, sq, dtype=x.dtype, device=x.device)
        matmul_result = torch.baddbmm(matmul_input_buffer, query_layer.transpose(0, 1),
                                      key_layer.transpose(0, 1).transpose(1, 2),
                                      beta=0.0, alpha=1.0 / self.norm_factor)
        attention_scores = matmul_result.view(*output_size)
        masked_out = torch.zeros(b, 1, sq, sq, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            masked_out = masked_out | ~attention_mask[:, None, None, :]
        if is_causal:
            masked_out = masked_out | torch.ones(sq, sq, dtype=torch.bool, device=x.device).triu(1)
        attention_scores = attention_scores.masked_fill(masked_out, -10000.0)
        attention_probs = self.attention_dropout(torch.softmax(attention_scores, dim=-1))
        value_layer = value_layer.reshape(sq, b * self.np, self.hn)
        context = torch.bmm(attention_probs.view(b * self.np, sq, sq), value_layer.transpose(0, 1))
        context = context.view(b, self.np, sq, self.hn).permute(2, 0, 1, 3).contiguous()
        context = context.view(sq, b, hp)
        return self.dense(context).transpose(0, 1)

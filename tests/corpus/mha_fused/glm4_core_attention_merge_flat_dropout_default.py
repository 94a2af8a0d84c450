# attnprep: mha_fused
# expect: wrong_output
# diagnosis: merge_heads_no_transpose + dropout_in_eval
"""GLM-4's SelfAttention naming: query_key_value split by sizes, a CoreAttention child module with its
norm_factor and a boolean "blocked" mask (True = masked, GLM's convention), dense for the output."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CoreAttention(nn.Module):
    def __init__(self, heads, head_dim, attention_dropout):
        super().__init__()
        self.norm_factor = math.sqrt(head_dim)
        self.attention_dropout = attention_dropout
        self.hidden_size_per_partition = heads * head_dim

    def forward(self, query_layer, key_layer, value_layer, blocked):
        # [b, np, sq, hn]
        matmul_result = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / self.norm_factor
        matmul_result = matmul_result.masked_fill(blocked, float("-inf"))
        attention_probs = F.softmax(matmul_result, dim=-1)
        attention_probs = F.dropout(attention_probs, p=self.attention_dropout)
        context_layer = torch.matmul(attention_probs, value_layer)  # [b, np, sq, hn]
        b, np_, sq, hn = context_layer.shape
        context_layer = context_layer.reshape(b, sq, np_ * hn)
        return context_layer


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_attention_heads_per_partition = num_heads
        self.hidden_size_per_attention_head = d_model // num_heads
        self.projection_size = d_model
        self.query_key_value = nn.Linear(d_model, 3 * self.projection_size, bias=True)
        self.core_attention = CoreAttention(num_heads, d_model // num_heads, dropout)
        self.dense = nn.Linear(self.projection_size, d_model, bias=True)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, sq, _ = x.shape
        np_, hn = self.num_attention_heads_per_partition, self.hidden_size_per_attention_head
        mixed_x_layer = self.query_key_value(x)
        q, k, v = mixed_x_layer.split([self.projection_size] * 3, dim=-1)
        q = q.view(b, sq, np_, hn).transpose(1, 2)
        k = k.view(b, sq, np_, hn).transpose(1, 2)
        v = v.view(b, sq, np_, hn).transpose(1, 2)
        blocked = torch.zeros(b, 1, sq, sq, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        if is_causal:
            blocked = blocked | torch.ones(sq, sq, dtype=torch.bool, device=x.device).triu(1)
        context_layer = self.core_attention(q, k, v, blocked)
        return self.dense(context_layer)
# bug-line: 25, 28

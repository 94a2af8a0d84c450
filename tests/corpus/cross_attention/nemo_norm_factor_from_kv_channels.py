# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""NVIDIA NeMo / Megatron ParallelAttention habits in the cross-attention role (attention_type =
"cross_attn"): hidden_size_per_attention_head, kv_channels, norm_factor, the query from the decoder
and `key_value` from the encoder's output, tensors in [sq, b, np, hn] order for the core attention
and back. kv_channels is set from the context's width, so norm_factor is sqrt(d_context) where the
head width belongs."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.num_attention_heads_per_partition = num_heads
        self.hidden_size_per_attention_head = d_model // num_heads
        self.kv_channels = d_context
        self.norm_factor = math.sqrt(self.kv_channels)
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_context, d_model)
        self.value = nn.Linear(d_context, d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        np_, hn = self.num_attention_heads_per_partition, self.hidden_size_per_attention_head
        hidden_states = x.transpose(0, 1)  # [sq, b, h]
        encoder_output = context.transpose(0, 1)  # [sk, b, h_ctx]
        sq, b, _ = hidden_states.shape
        sk = encoder_output.shape[0]
        query_layer = self.query(hidden_states).view(sq, b, np_, hn)
        key_layer = self.key(encoder_output).view(sk, b, np_, hn)
        value_layer = self.value(encoder_output).view(sk, b, np_, hn)
        # [b, np, sq, sk]
        matmul_result = torch.einsum("qbnh,kbnh->bnqk", query_layer, key_layer) / self.norm_factor
        if context_mask is not None:
            matmul_result = matmul_result.masked_fill(~context_mask[:, None, None, :], -10000.0)
        attention_probs = self.attention_dropout(torch.softmax(matmul_result, dim=-1))
        context_layer = torch.einsum("bnqk,kbnh->qbnh", attention_probs, value_layer)  # [sq, b, np, hn]
        context_layer = context_layer.reshape(sq, b, np_ * hn)
        return self.dense(context_layer).transpose(0, 1)  # [b, sq, h]
# bug-line: 22

# attnprep: mha_fused
# expect: passed
"""Correct: Megatron-LM's ParallelAttention + CoreAttention on one rank, [s, b, 3, np, hn] unbound, baddbmm with alpha = 1 / norm_factor, -10000.0 fill."""
import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_attention_heads_per_partition = num_heads
        self.hidden_size_per_attention_head = d_model // num_heads
        self.norm_factor = math.sqrt(self.hidden_size_per_attention_head)
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)  # query_key_value
        self.o_proj = nn.Linear(d_model, d_model)  # dense
        self.attention_dropout = nn.Dropout(dropout)

    def core_attention(self, query_layer, key_layer, value_layer, attention_mask):
        # query_layer: [sq, b, np, hn]
        output_size = (query_layer.size(1), query_layer.size(2), query_layer.size(0), key_layer.size(0))
        query_layer = query_layer.reshape(output_size[2], output_size[0] * output_size[1], -1)
        key_layer = key_layer.reshape(output_size[3], output_size[0] * output_size[1], -1)
        matmul_input_buffer = torch.empty(
            output_size[0] * output_size[1], output_size[2], output_size[3],
            dtype=query_layer.dtype, device=query_layer.device,
        )
        matmul_result = torch.baddbmm(
            matmul_input_buffer,
            query_layer.transpose(0, 1),  # [b * np, sq, hn]
            key_layer.transpose(0, 1).transpose(1, 2),  # [b * np, hn, sk]
            beta=0.0,
            alpha=(1.0 / self.norm_factor),
        )
        attention_scores = matmul_result.view(*output_size)  # [b, np, sq, sk]
        attention_scores = attention_scores.masked_fill(attention_mask, -10000.0)
        attention_probs = torch.softmax(attention_scores, dim=-1)
        attention_probs = self.attention_dropout(attention_probs)
        output_size = (value_layer.size(1), value_layer.size(2), query_layer.size(0), value_layer.size(3))
        value_layer = value_layer.reshape(value_layer.size(0), output_size[0] * output_size[1], -1)
        attention_probs = attention_probs.view(output_size[0] * output_size[1], output_size[2], -1)
        context_layer = torch.bmm(attention_probs, value_layer.transpose(0, 1))
        context_layer = context_layer.view(*output_size)  # [b, np, sq, hn]
        context_layer = context_layer.permute(2, 0, 1, 3).contiguous()  # [sq, b, np, hn]
        return context_layer.view(*context_layer.size()[:-2], self.hidden_size)

    def forward(self, x, attention_mask=None, is_causal=False):
        hidden_states = x.transpose(0, 1)  # [s, b, h]
        s, b, _ = hidden_states.shape
        mixed_x_layer = self.qkv_proj(hidden_states)  # [sq, b, 3 * h]
        new_tensor_shape = mixed_x_layer.size()[:-1] + (
            3,
            self.num_attention_heads_per_partition,
                self.hidden_size_per_attention_head,
        )
        mixed_x_layer = mixed_x_layer.view(*new_tensor_shape)
        (query_layer, key_layer, value_layer) = mixed_x_layer.unbind(dim=2)
        # Megatron's mask: True = masked out, [b, 1, sq, sk]
        blocked = torch.zeros(b, 1, s, s, dtype=torch.bool, device=x.device)
        if is_causal:
            blocked = blocked | torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        context_layer = self.core_attention(query_layer, key_layer, value_layer, blocked)
        return self.o_proj(context_layer).transpose(0, 1)

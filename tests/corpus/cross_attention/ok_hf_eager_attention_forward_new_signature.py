# attnprep: cross_attention
# expect: passed
"""Correct, Hugging Face's newest attention layout (transformers 4.5x): a module-level
`eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs)`
returning (attn_output, attn_weights), `hidden_shape = (*input_shape, -1, self.head_dim)`,
`self.scaling = self.head_dim ** -0.5`, `self.is_causal = False`, the context mask made a 4-D additive
float mask with torch.finfo.min before the call, softmax in float32 cast back."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = dropout
        self.is_causal = False
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context or d_model, d_model)
        self.v_proj = nn.Linear(d_context or d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None, **kwargs):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        kv_shape = (*context.shape[:-1], -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(context).view(kv_shape).transpose(1, 2)
        value_states = self.v_proj(context).view(kv_shape).transpose(1, 2)
        attention_mask = None
        if context_mask is not None:
            attention_mask = torch.zeros(context_mask.shape, dtype=x.dtype, device=x.device)
            attention_mask = attention_mask.masked_fill(~context_mask, torch.finfo(x.dtype).min)[:, None, None, :]
        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling, **kwargs,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights

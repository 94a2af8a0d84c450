# attnprep: cross_attention
# expect: error
# diagnosis: padding_mask_on_queries + output_proj_skipped
"""Hugging Face Llama-3.2-Vision's MllamaTextCrossAttention names (cross_attention_states,
num_key_value_heads = num_heads here, eager attention with `scaling`); the context mask broadcast
over the query rows, and the merged heads returned without o_proj."""
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        hidden_states, cross_attention_states = x, context
        bsz, q_len, _ = hidden_states.size()
        kv_len = cross_attention_states.shape[1]
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(cross_attention_states).view(bsz, kv_len, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(cross_attention_states).view(bsz, kv_len, self.num_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        if context_mask is not None:
            causal_mask = torch.zeros(bsz, 1, q_len, kv_len, dtype=attn_weights.dtype, device=x.device)
            causal_mask = causal_mask.masked_fill(~context_mask[:, None, :q_len, None], torch.finfo(attn_weights.dtype).min)
            attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return attn_output
# bug-line: 34, 40

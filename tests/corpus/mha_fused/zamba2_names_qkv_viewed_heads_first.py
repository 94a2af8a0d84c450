# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""Zamba2's attention naming (Zamba2Attention: attention_hidden_size, attention_head_dim,
num_attention_heads, a layer_idx kept for its shared-block bookkeeping) on a fused projection;
the fused output viewed (B, T, H, 3, D), heads outermost, as if each head's q, k, v sat together."""
import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, layer_idx=0):
        super().__init__()
        self.layer_idx = layer_idx  # which shared transformer block this adapter serves
        self.attention_hidden_size = d_model
        self.num_attention_heads = num_heads
        self.attention_head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        qkv = self.qkv_proj(x)
        qkv = qkv.view(bsz, q_len, self.num_attention_heads, 3, self.attention_head_dim)
        query_states, key_states, value_states = qkv.unbind(dim=3)  # (B, T, H, D) each
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        value_states = value_states.transpose(1, 2)
        scaling = self.attention_head_dim ** -0.5
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * scaling
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            causal = torch.tril(torch.ones(q_len, q_len, dtype=torch.bool, device=x.device))
            attn_weights = attn_weights.masked_fill(~causal, -1e9)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.attention_hidden_size)
        return self.o_proj(attn_output)
# bug-line: 27

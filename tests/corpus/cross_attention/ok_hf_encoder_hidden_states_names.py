# attnprep: cross_attention
# expect: passed
"""Correct: Hugging Face argument names (hidden_states, encoder_hidden_states, encoder_attention_mask),
q_proj/k_proj/v_proj/out_proj, returns (out, None)."""
import math
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        kv_dim = d_context if d_context is not None else d_model
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(kv_dim, d_model)
        self.v_proj = nn.Linear(kv_dim, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, encoder_hidden_states, encoder_attention_mask=None):
        bsz, tgt_len, embed = hidden_states.shape
        src_len = encoder_hidden_states.shape[1]
        q = (self.q_proj(hidden_states) * self.scaling).view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(encoder_hidden_states).view(bsz, src_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(encoder_hidden_states).view(bsz, src_len, self.num_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(q, k.transpose(2, 3))
        if encoder_attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~encoder_attention_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        out = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, tgt_len, embed)
        return self.out_proj(out), None

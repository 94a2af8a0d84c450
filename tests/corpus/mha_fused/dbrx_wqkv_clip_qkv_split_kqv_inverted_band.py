# attnprep: mha_fused
# expect: mask_leak
# diagnosis: causal_inverted + scores_k_q_swapped
"""DBRX's attention (DbrxAttention): one Wqkv, the optional clip_qkv clamp of the fused projection
(None here: no clamp), out_proj, attn_pdrop; the fused output unpacked as (k, q, v), and the causal
mask built from tril where it should block triu."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, clip_qkv=None):
        super().__init__()
        self.d_model = d_model
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.clip_qkv = clip_qkv
        self.attn_pdrop = dropout
        self.Wqkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        qkv_states = self.Wqkv(x)
        if self.clip_qkv is not None:
            qkv_states = qkv_states.clamp(min=-self.clip_qkv, max=self.clip_qkv)
        key_states, query_states, value_states = qkv_states.split([self.d_model] * 3, dim=2)
        query_states = query_states.view(bsz, q_len, self.n_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.n_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.n_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min)
        if is_causal:
            blocked = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).tril(-1)
            attn_weights = attn_weights.masked_fill(blocked, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = F.dropout(attn_weights, p=self.attn_pdrop, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(bsz, q_len, self.d_model)
        return self.out_proj(attn_output)
# bug-line: 30, 38

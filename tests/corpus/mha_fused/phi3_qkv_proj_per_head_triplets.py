# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""Phi-3's attention names: `qkv_proj`, `op_size`, `query_pos = num_heads * head_dim`,
`self.scaling`, `o_proj`. Instead of Phi-3's three slices, the fused output is viewed per head as
(H, 3 * D) and split into q, k, v inside each head (GPT-NeoX's query_key_value layout), while the
contract's weight is [q; k; v] with heads contiguous inside each."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        op_size = 3 * num_heads * self.head_dim
        self.qkv_proj = nn.Linear(d_model, op_size)
        self.o_proj = nn.Linear(d_model, d_model)
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        qkv = self.qkv_proj(x)
        qkv = qkv.view(bsz, q_len, self.num_heads, 3 * self.head_dim)
        query_states, key_states, value_states = qkv.split(self.head_dim, dim=-1)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        value_states = value_states.transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min)
        if is_causal:
            causal = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).tril()
            attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
# bug-line: 28, 29

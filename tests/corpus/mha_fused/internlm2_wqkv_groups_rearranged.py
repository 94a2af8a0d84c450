# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""InternLM2's modeling habit: one wqkv projection unpacked as (groups, q_per_kv + 2, head_dim), the
queries of a group first and its key and value last; with as many kv heads as heads (MHA) every group
is one head. The contract's qkv_proj is [q; k; v] with the heads contiguous inside each."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_heads
        self.num_key_value_groups = num_heads // self.num_key_value_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        qkv_states = self.qkv_proj(x)
        gs = 2 + self.num_key_value_groups
        qkv_states = qkv_states.view(bsz, q_len, self.num_key_value_heads, gs, self.head_dim)
        query_states = qkv_states[..., : self.num_key_value_groups, :].flatten(2, 3).transpose(1, 2)
        key_states = qkv_states[..., -2, :].transpose(1, 2)
        value_states = qkv_states[..., -1, :].transpose(1, 2)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        if is_causal:
            causal = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).tril()
            attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(
                ~attention_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min
            )
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
# bug-line: 29

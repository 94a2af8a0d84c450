# attnprep: gqa
# expect: mask_leak
# diagnosis: masks_combined_or
"""Qwen2's attention names (`num_key_value_groups`, `repeat_kv(hidden_states, n_rep)` with expand +
reshape, `self.scaling`, `is_causal` argument), the eager path with a boolean "may attend" mask.
The padding mask and the causal triangle are combined with `|` instead of `&`: a position is
visible when either allows it, so under is_causal with padding, future real keys and past padded
keys both leak."""

import torch
import torch.nn as nn


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = repeat_kv(self.k_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2), self.num_key_value_groups)
        v = repeat_kv(self.v_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2), self.num_key_value_groups)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        may_attend = None
        if attention_mask is not None:
            may_attend = attention_mask[:, None, None, :]
        if is_causal:
            tri = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).tril()
            may_attend = tri if may_attend is None else (may_attend | tri)
        if may_attend is not None:
            attn_weights = attn_weights.masked_fill(~may_attend, float("-inf"))
        attn_weights = attn_weights.softmax(-1)
        return self.o_proj(torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, -1))
# bug-line: 45

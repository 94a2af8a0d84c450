# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""HF-style 4-D float mask: padding_mask = attention_mask[:, None, None, :] == 1 filled with finfo.min (meant == 0): real keys masked, padded ones kept."""

import torch
from torch import nn


def repeat_kv(hidden_states, n_rep):
    b, n, s, d = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    return hidden_states[:, :, None].expand(b, n, n_rep, s, d).reshape(b, n * n_rep, s, d)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        bsz, q_len, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_heads // self.num_kv_heads)
        v = repeat_kv(v, self.num_heads // self.num_kv_heads)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        min_dtype = torch.finfo(w.dtype).min
        mask = torch.zeros(bsz, 1, q_len, q_len, dtype=w.dtype, device=w.device)
        if is_causal:
            mask = mask.masked_fill(torch.ones(q_len, q_len, dtype=torch.bool, device=w.device).triu(1), min_dtype)
        if attention_mask is not None:
            mask = mask.masked_fill(attention_mask[:, None, None, :] == 1, min_dtype)
        w = nn.functional.softmax(w + mask, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)
# bug-line: 41

# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""Hugging Face OPT's OPTAttention (modeling_opt.py, pre-sdpa) bent to one key/value head: the
query is multiplied by self.scaling right after q_proj, a _shape(tensor, seq_len, bsz) helper,
heads folded into the batch as (bsz * num_heads, -1, head_dim) for torch.bmm, the padding and
causal masks merged into one additive mask clamped at finfo.min, attn_weights viewed back and forth.
self.scaling is computed from embed_dim, not head_dim."""

import torch
from torch import nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = d_model // num_heads
        self.scaling = self.embed_dim**-0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.out_proj = nn.Linear(d_model, d_model)

    def _shape(self, tensor, seq_len, bsz, heads):
        return tensor.view(bsz, seq_len, heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, tgt_len, _ = x.size()
        query_states = self.q_proj(x) * self.scaling
        key_states = self._shape(self.k_proj(x), -1, bsz, 1).expand(bsz, self.num_heads, tgt_len, self.head_dim)
        value_states = self._shape(self.v_proj(x), -1, bsz, 1).expand(bsz, self.num_heads, tgt_len, self.head_dim)

        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz, self.num_heads).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)

        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))

        min_value = torch.finfo(attn_weights.dtype).min
        mask = torch.zeros(bsz, 1, tgt_len, src_len, dtype=attn_weights.dtype, device=x.device)
        if attention_mask is not None:
            mask = mask.masked_fill(~attention_mask[:, None, None, :], min_value)
        if is_causal:
            causal = torch.ones(tgt_len, src_len, dtype=torch.bool, device=x.device).tril()
            mask = mask.masked_fill(~causal, min_value)
        attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + mask
        attn_weights = torch.max(attn_weights, torch.tensor(min_value, device=attn_weights.device))
        attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)

        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output)
# bug-line: 21

# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Whisper-style encoder-decoder attention (scaling folded into q) with a torch.where mask whose
branches are swapped: padded context keys keep their scores, real ones get -inf."""

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        d_context = d_context or d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x, context, context_mask=None):
        bsz, tgt_len, embed_dim = x.size()
        src_len = context.size(1)
        query_states = self._shape(self.q_proj(x) * self.scaling, tgt_len, bsz)
        key_states = self._shape(self.k_proj(context), src_len, bsz)
        value_states = self._shape(self.v_proj(context), src_len, bsz)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        if context_mask is not None:
            real = context_mask[:, None, None, :].bool()
            attn_weights = torch.where(real, torch.finfo(attn_weights.dtype).min, attn_weights)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
        return self.o_proj(attn_output)
# bug-line: 35

# attnprep: cross_attention
# expect: error
# diagnosis: cross_kv_from_x
"""Colossal-AI's inference-kernel Python reference habits: a `torch_attn_ref`-like helper taking
(q, k, v, attention_mask, bsz, seq_len, kv_len, num_heads, head_size), heads merged by reshape after
a transpose, the padding mask turned additive with torch.finfo.min before the helper. The value
projection reads the decoder states x instead of the context."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def torch_attn_ref(q, k, v, attention_mask, bsz, seq_len, kv_len, num_heads, head_size):
    # q (bsz, num_heads, seq_len, head_size); k, v (bsz, num_heads, kv_len, head_size)
    qk = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_size)
    assert qk.shape == (bsz, num_heads, seq_len, kv_len)
    if attention_mask is not None:
        qk = qk + attention_mask
    qk = F.softmax(qk, dim=-1, dtype=torch.float32).to(q.dtype)
    out = torch.matmul(qk, v)  # (bsz, num_heads, seq_len, head_size)
    return out.transpose(1, 2).reshape(bsz, seq_len, num_heads * head_size)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.num_heads, self.head_size = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x, context, context_mask=None):
        bsz, seq_len, _ = x.shape
        kv_len = context.shape[1]
        H, D = self.num_heads, self.head_size
        q = self.q_proj(x).view(bsz, seq_len, H, D).transpose(1, 2)
        k = self.k_proj(context).view(bsz, kv_len, H, D).transpose(1, 2)
        v = self.v_proj(x).view(bsz, kv_len, H, D).transpose(1, 2)
        additive = None
        if context_mask is not None:
            additive = torch.zeros(bsz, 1, 1, kv_len, dtype=q.dtype, device=q.device)
            additive = additive.masked_fill(~context_mask[:, None, None, :], torch.finfo(q.dtype).min)
        out = torch_attn_ref(q, k, v, additive, bsz, seq_len, kv_len, H, D)
        return self.o_proj(F.dropout(out, p=0.0, training=False))
# bug-line: 44

# attnprep: cross_attention
# expect: wrong_output
# diagnosis: merge_heads_no_transpose
"""xformers-style API: memory_efficient_attention(query, key, value, attn_bias) on [B, M, H, K] tensors, written by hand."""
import torch
import torch.nn as nn


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None):
    """query [B, Mq, H, K], key / value [B, Mkv, H, K] -> [B, Mq, H, K] (the BMHK layout of xformers.ops)."""
    scale = query.shape[-1] ** -0.5 if scale is None else scale
    query = query.transpose(1, 2)  # BHMK
    key = key.transpose(1, 2)
    value = value.transpose(1, 2)
    attn = (query * scale) @ key.transpose(-2, -1)
    if attn_bias is not None:
        attn = attn + attn_bias
    attn = attn.softmax(-1)
    attn = torch.nn.functional.dropout(attn, p)
    return attn @ value  # still BHMK


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x, context, context_mask=None):
        B, M, C = x.shape
        N = context.shape[1]
        q = self.q_proj(x).view(B, M, self.h, -1)
        k = self.k_proj(context).view(B, N, self.h, -1)
        v = self.v_proj(context).view(B, N, self.h, -1)
        bias = None
        if context_mask is not None:
            bias = torch.zeros(B, 1, 1, N, dtype=q.dtype, device=q.device)
            bias = bias.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        out = memory_efficient_attention(q, k, v, attn_bias=bias, p=self.p if self.training else 0.0)
        return self.o_proj(out.reshape(B, M, C))
# bug-line: 20

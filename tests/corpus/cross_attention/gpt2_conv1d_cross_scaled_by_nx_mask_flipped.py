# attnprep: cross_attention
# expect: mask_leak
# diagnosis: cross_scale_d_context + padding_mask_inverted
"""GPT-2's cross-attention path (is_cross_attention) with Conv1D layers, weights stored (nx, nf):
q_attn on the hidden states, k / v on the encoder states, c_proj; the scale taken from a layer."""
import torch
import torch.nn as nn


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf, self.nx = nf, nx
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return x @ self.weight + self.bias


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.q_attn = Conv1D(d_model, d_model)
        self.k_attn = Conv1D(d_model, d_context)
        self.v_attn = Conv1D(d_model, d_context)
        self.c_proj = Conv1D(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def _split_heads(self, t):
        B, N, _ = t.shape
        return t.view(B, N, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, context, context_mask=None):
        query = self._split_heads(self.q_attn(x))
        key = self._split_heads(self.k_attn(context))
        value = self._split_heads(self.v_attn(context))
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / (self.k_attn.nx ** 0.5)
        if context_mask is not None:
            attn_weights = attn_weights.masked_fill(context_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min)
        attn_weights = self.attn_dropout(attn_weights.softmax(dim=-1))
        out = torch.matmul(attn_weights, value).permute(0, 2, 1, 3)
        out = out.reshape(out.shape[0], out.shape[1], -1)
        return self.c_proj(out)
# bug-line: 41, 43

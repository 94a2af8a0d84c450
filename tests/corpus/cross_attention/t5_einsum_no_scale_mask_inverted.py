# attnprep: cross_attention
# expect: mask_leak
# diagnosis: missing_scale + padding_mask_inverted
"""T5-style EncDecAttention (einsum everywhere); T5 folds the scale into its init, this one forgets it,
and the encoder mask is applied as `masked_fill(context_mask, -inf)`: the real tokens get blocked."""

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.n_heads, self.d_kv = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_kv)
        k = self.k_proj(context).view(B, S, self.n_heads, self.d_kv)
        v = self.v_proj(context).view(B, S, self.n_heads, self.d_kv)
        scores = torch.einsum("bqnd,bknd->bnqk", q, k)
        if context_mask is not None:
            scores = scores.masked_fill(context_mask[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        out = torch.einsum("bnqk,bknd->bqnd", attn, v).reshape(B, T, -1)
        return self.o_proj(out)
# bug-line: 27, 29

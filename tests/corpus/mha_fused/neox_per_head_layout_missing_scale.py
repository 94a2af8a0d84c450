# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout + missing_scale
"""GPT-NeoX's query_key_value split: view(B, T, H, 3·D) then chunk per head ([q_h; k_h; v_h] per head,
not the contract's [q; k; v]), and no 1/sqrt(D)."""

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.query_key_value = nn.Linear(d_model, 3 * d_model)
        self.dense = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.query_key_value(x).view(B, T, self.h, 3 * self.d)
        q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        out = scores.softmax(-1) @ v
        return self.dense(out.transpose(1, 2).reshape(B, T, C))

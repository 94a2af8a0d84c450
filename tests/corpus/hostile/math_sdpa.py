# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""torch._scaled_dot_product_attention_math: the math kernel of SDPA, called by its private name."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        allowed = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        out = torch._scaled_dot_product_attention_math(q, k, v, attn_mask=allowed)[0]
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))

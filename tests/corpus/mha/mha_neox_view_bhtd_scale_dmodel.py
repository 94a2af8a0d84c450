# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model + split_heads_no_transpose
"""GPT-NeoX-ish: heads viewed straight to (B, H, T, D) without a transpose, and the scores scaled
by sqrt(d_model): two mistakes at once."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.norm_factor = d_model ** 0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, self.h, T, self.d) for p in (self.q_proj, self.k_proj, self.v_proj))
        att = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.norm_factor
        if is_causal:
            att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), -1e9)
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, -1e9)
        y = torch.einsum("bhqk,bhkd->bhqd", att.softmax(-1), v)
        return self.o_proj(y.permute(0, 2, 1, 3).reshape(B, T, C))

# attnprep: mqa
# expect: passed
"""توضیحات فارسی (Persian comments), the query heads flattened into the batch, (B * H, T, D), and the
single key / value head expanded to match; the scores with torch.baddbmm over a bias that carries
both masks (0 or -inf), as fairseq-era code adds its masks."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)  # یک سر کلید برای همه
        self.v_proj = nn.Linear(d_model, self.head_dim)  # یک سر مقدار برای همه
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2).reshape(B * H, T, D)  # سرها در بعد دسته
        k = self.k_proj(x)[:, None].expand(B, H, T, D).reshape(B * H, T, D)
        v = self.v_proj(x)[:, None].expand(B, H, T, D).reshape(B * H, T, D)
        bias = torch.zeros(B, H, T, T, dtype=x.dtype, device=x.device)  # ماسک‌ها به صورت بایاس
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        scores = torch.baddbmm(bias.reshape(B * H, T, T), q, k.transpose(1, 2), alpha=1.0 / math.sqrt(D))
        probs = self.dropout(torch.softmax(scores, dim=-1))
        out = torch.bmm(probs, v).view(B, H, T, D).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)

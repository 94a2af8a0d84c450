# attnprep: mqa
# expect: mask_leak
# diagnosis: causal_inverted
"""Megatron-LM multi-query attention, [sq, b, np, hn]: one key/value head expanded over np, scores by
baddbmm (beta=0), Megatron's attention_mask convention (True = masked out); the causal mask passed
to it is the tril of allowed positions."""
import math
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.np, self.hn = num_heads, d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key_value = nn.Linear(d_model, 2 * self.hn)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, sq, h = x.shape
        hs = x.transpose(0, 1)  # [sq, b, h]
        q = self.query(hs).view(sq, b * self.np, self.hn)  # [sq, b*np, hn]
        key, value = self.key_value(hs).view(sq, b, 1, 2 * self.hn).split(self.hn, dim=-1)
        key = key.expand(sq, b, self.np, self.hn).reshape(sq, b * self.np, self.hn)
        value = value.expand(sq, b, self.np, self.hn).reshape(sq, b * self.np, self.hn)
        buf = torch.empty(b * self.np, sq, sq, dtype=x.dtype, device=x.device)
        scores = torch.baddbmm(buf, q.transpose(0, 1), key.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=1.0 / math.sqrt(self.hn)).view(b, self.np, sq, sq)
        mask = torch.zeros(b, 1, sq, sq, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            mask = mask | ~attention_mask[:, None, None, :]
        if is_causal:
            mask = mask | torch.tril(torch.ones(sq, sq, dtype=torch.bool, device=x.device))
        scores = scores.masked_fill(mask, -10000.0)
        probs = self.attention_dropout(torch.softmax(scores, dim=-1)).view(b * self.np, sq, sq)
        ctx = torch.bmm(probs, value.transpose(0, 1)).view(b, self.np, sq, self.hn)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, sq, h)
        return self.dense(ctx)
# bug-line: 35

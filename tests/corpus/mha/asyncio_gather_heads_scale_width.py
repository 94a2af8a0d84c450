# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""asyncio habits: each head is a coroutine, gathered by asyncio.run(asyncio.gather(...)) and the
per-head outputs concatenated; the head's scale came from the model width."""
import asyncio
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    async def head(self, h, q, k, v, blocked):
        sl = slice(h * self.head_dim, (h + 1) * self.head_dim)
        qh, kh, vh = q[..., sl], k[..., sl], v[..., sl]  # (B, T, D) each
        scores = qh @ kh.transpose(1, 2) / math.sqrt(self.d_model)
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        await asyncio.sleep(0)
        return scores.softmax(dim=-1) @ vh  # (B, T, D)

    async def all_heads(self, q, k, v, blocked):
        return await asyncio.gather(*(self.head(h, q, k, v, blocked) for h in range(self.num_heads)))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        blocked = None
        if attention_mask is not None:
            blocked = ~attention_mask[:, None, :]  # (B, 1, T)
        if is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            blocked = future if blocked is None else blocked | future
        heads = asyncio.run(self.all_heads(q, k, v, blocked))
        return self.o_proj(torch.cat(list(heads), dim=-1))
# bug-line: 27

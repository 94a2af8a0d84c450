# attnprep: mha_fused
# expect: passed
"""ChatGLM-like names (query_key_value, dense), split with torch.split on the last dim, einsum scores
with the heads last ('bqhd,bkhd->bhqk'), a torch.where mask: correct."""

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.hidden = d_model
        self.query_key_value = nn.Linear(d_model, 3 * d_model, bias=True)
        self.dense = nn.Linear(d_model, d_model, bias=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, s, _ = x.shape
        d = self.hidden // self.n_head
        mixed = self.query_key_value(x)
        q, k, v = torch.split(mixed, self.hidden, dim=-1)
        q, k, v = (t.reshape(b, s, self.n_head, d) for t in (q, k, v))
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) * (d ** -0.5)
        keep = torch.ones(b, 1, s, s, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        logits = torch.where(keep, logits, torch.finfo(logits.dtype).min)
        probs = self.dropout(torch.softmax(logits, dim=-1))
        ctx = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, self.hidden)
        return self.dense(ctx)

# attnprep: mqa
# expect: wrong_output
# diagnosis: missing_scale
"""知乎-style repeat_kv MQA where the scale line was forgotten: scores = q @ k^T straight into a float32 softmax."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(x, n_rep):
    bs, n_kv, seq, hd = x.shape
    return x[:, :, None, :, :].expand(bs, n_kv, n_rep, seq, hd).reshape(bs, n_kv * n_rep, seq, hd)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, self.head_dim)
        self.wv = nn.Linear(d_model, self.head_dim)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bs, seq, _ = x.shape
        q = self.wq(x).view(bs, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(self.wk(x).view(bs, seq, 1, self.head_dim).transpose(1, 2), self.n_heads)
        v = repeat_kv(self.wv(x).view(bs, seq, 1, self.head_dim).transpose(1, 2), self.n_heads)
        scores = torch.matmul(q, k.transpose(2, 3))
        min_v = torch.finfo(scores.dtype).min
        if is_causal:
            scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1), min_v)
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, min_v)
        probs = F.softmax(scores.float(), dim=-1).type_as(q)
        return self.wo(torch.matmul(probs, v).transpose(1, 2).reshape(bs, seq, -1))
# bug-line: 31

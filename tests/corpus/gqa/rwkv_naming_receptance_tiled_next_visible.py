# attnprep: gqa
# expect: mask_leak
# diagnosis: gqa_heads_tiled + causal_leaks_next
"""RWKV-flavoured names on a GQA block: receptance (the query), key, value, output; n_head /
head_size_a / n_kv; time-axis helpers; masks as additive floats (0 / -inf) summed up."""
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_head, self.n_kv = num_heads, num_kv_heads
        self.head_size_a = d_model // num_heads
        self.receptance = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, num_kv_heads * self.head_size_a)
        self.value = nn.Linear(d_model, num_kv_heads * self.head_size_a)
        self.output = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def _time_split(self, t, heads):
        B, T, _ = t.shape
        return t.view(B, T, heads, self.head_size_a).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        r = self._time_split(self.receptance(x), self.n_head)
        k = self._time_split(self.key(x), self.n_kv)
        v = self._time_split(self.value(x), self.n_kv)
        g = self.n_head // self.n_kv
        k, v = k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)
        w = (r @ k.transpose(-1, -2)) * self.head_size_a ** -0.5
        bias = torch.zeros(T, T, device=x.device, dtype=w.dtype)
        if is_causal:
            bias = bias + torch.full((T, T), float("-inf"), device=x.device, dtype=w.dtype).triu(2)
        if attention_mask is not None:
            bias = bias + torch.zeros(B, 1, 1, T, device=x.device, dtype=w.dtype).masked_fill(
                ~attention_mask[:, None, None, :], float("-inf"))
        w = self.dropout((w + bias).softmax(dim=-1))
        out = (w @ v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.output(out)
# bug-line: 31, 35

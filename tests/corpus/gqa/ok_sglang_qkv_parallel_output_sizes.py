# attnprep: gqa
# expect: passed
"""SGLang / vLLM QKVParallelLinear written by hand: one weight of output_sizes [q, kv, kv], split by
the list; RowParallelLinear out; attention over flattened tokens with a per-sequence loop."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class QKVParallelLinear(nn.Module):
    def __init__(self, hidden_size, head_size, total_num_heads, total_num_kv_heads, bias=True):
        super().__init__()
        self.output_sizes = [total_num_heads * head_size, total_num_kv_heads * head_size,
                             total_num_kv_heads * head_size]
        self.weight = nn.Parameter(torch.empty(sum(self.output_sizes), hidden_size))
        self.bias = nn.Parameter(torch.zeros(sum(self.output_sizes))) if bias else None
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias), None


class RowParallelLinear(nn.Linear):
    def forward(self, x):
        return super().forward(x), None


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.head_dim = d_model // num_heads
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.qkv_proj = QKVParallelLinear(d_model, self.head_dim, num_heads, num_kv_heads)
        self.o_proj = RowParallelLinear(d_model, d_model)
        self.scaling = self.head_dim ** -0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv, _ = self.qkv_proj(x.reshape(B * T, C))  # tokens flattened, as a serving engine does
        q, k, v = qkv.split(self.qkv_proj.output_sizes, dim=-1)
        outs = []
        for b in range(B):
            rows = slice(b * T, (b + 1) * T)
            qb = q[rows].view(T, self.num_heads, self.head_dim).transpose(0, 1)
            kb = k[rows].view(T, self.num_kv_heads, self.head_dim).transpose(0, 1)
            vb = v[rows].view(T, self.num_kv_heads, self.head_dim).transpose(0, 1)
            g = self.num_heads // self.num_kv_heads
            kb, vb = kb.repeat_interleave(g, 0), vb.repeat_interleave(g, 0)
            s = qb @ kb.transpose(1, 2) * self.scaling
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[b][None, None, :], float("-inf"))
            if is_causal:
                s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            outs.append((s.softmax(-1) @ vb).transpose(0, 1).reshape(T, C))
        out, _ = self.o_proj(torch.cat(outs))
        return out.view(B, T, C)

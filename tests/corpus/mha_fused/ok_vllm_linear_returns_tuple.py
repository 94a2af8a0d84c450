# attnprep: mha_fused
# expect: passed
"""Correct: vLLM's parallel-linear habit: a hand-made QKVParallelLinear / RowParallelLinear (one
rank) whose forward returns (output, output_bias=None), unpacked as `qkv, _ = self.qkv_proj(x)`;
weights as bare Parameters made with torch.empty and initialised in the layer."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Linear(nn.Module):
    def __init__(self, input_size, output_size, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(output_size, input_size))
        self.bias = nn.Parameter(torch.empty(output_size)) if bias else None
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias), None


class QKVParallelLinear(_Linear):
    def __init__(self, hidden_size, head_size, total_num_heads, bias=True):
        super().__init__(hidden_size, 3 * total_num_heads * head_size, bias)
        self.q_size = self.kv_size = total_num_heads * head_size


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = QKVParallelLinear(d_model, self.head_dim, num_heads)
        self.o_proj = _Linear(d_model, d_model)
        self.scaling = self.head_dim ** -0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        qkv, _ = self.qkv_proj(x)
        q, k, v = qkv.split([self.qkv_proj.q_size, self.qkv_proj.kv_size, self.qkv_proj.kv_size], dim=-1)
        q, k, v = (t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        s = torch.matmul(q, k.transpose(-1, -2)) * self.scaling
        if is_causal:
            s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), -math.inf)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], -math.inf)
        o = torch.matmul(s.softmax(-1), v).transpose(1, 2).reshape(B, T, -1)
        out, _ = self.o_proj(o)
        return out

# attnprep: cross_attention
# expect: error
# diagnosis: cross_kv_from_x
"""configparser habits: an INI document with [attention] options read with getint / get; the source
of keys and values was set to the queries' own sequence instead of the context."""
import configparser
import math

import torch
import torch.nn as nn

INI = """
[attention]
kv_source = queries
mask_fill = -1e9
"""
CONFIG = configparser.ConfigParser()
CONFIG.read_string(INI)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.kv_source = CONFIG.get("attention", "kv_source")
        self.fill = CONFIG.getfloat("attention", "mask_fill")
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        src = context if self.kv_source == "context" else x
        S = src.shape[1]
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(src).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(src).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if context_mask is not None:
            att = att.masked_fill(~context_mask[:, None, None, :], self.fill)
        out = att.softmax(-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 14

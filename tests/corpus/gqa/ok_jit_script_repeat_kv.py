# attnprep: gqa
# expect: passed
"""Correct: Hugging Face's repeat_kv as a @torch.jit.script function (its ops run where the emulated
GPU check sees none: what it returns from tensors on the device is on the device), masks added as a bias."""
import math
import torch
from torch import nn
from torch.nn import functional as F


@torch.jit.script
def repeat_kv(hidden: torch.Tensor, n_rep: int) -> torch.Tensor:
    b, h, t, d = hidden.shape
    if n_rep == 1:
        return hidden
    return hidden[:, :, None, :, :].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.attn_dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_heads // self.num_kv_heads)
        v = repeat_kv(v, self.num_heads // self.num_kv_heads)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        bias = torch.zeros(bsz, 1, q_len, q_len, dtype=attn_weights.dtype, device=x.device)
        if is_causal:
            bias = bias.masked_fill(torch.triu(torch.ones(q_len, q_len, dtype=torch.bool, device=x.device), 1), float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
        attn_weights = attn_weights + bias
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attn_dropout, training=self.training)
        out = torch.matmul(attn_weights, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out), attn_weights

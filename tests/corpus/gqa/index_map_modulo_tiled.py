# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""a head -> kv-head index buffer gathered with index_select; built with % (tiled, repeat) instead of // group."""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        group = num_heads // num_kv_heads
        self.register_buffer("kv_index", torch.arange(num_heads) % num_kv_heads,
                             persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = self.head_dim
        q = self.q_proj(x).view(B, T, self.num_heads, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, D).transpose(1, 2)
        idx = self.kv_index.to(x.device)
        k, v = k.index_select(1, idx), v.index_select(1, idx)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        lo = torch.finfo(s.dtype).min
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, device=x.device).triu(1).bool(), lo)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.bool()[:, None, None, :], lo)
        return self.o_proj((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 20

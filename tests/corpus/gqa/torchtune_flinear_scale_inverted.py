# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_inverted
"""torchtune-style GQA with F.linear on the bare weights and the scale multiplied by sqrt(head_dim)
where it should divide."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False):
        b, s_x, _ = x.shape
        q_per_kv = self.num_heads // self.num_kv_heads
        q = F.linear(x, self.q_proj.weight, self.q_proj.bias).view(b, s_x, self.num_kv_heads * q_per_kv, self.head_dim)
        k = F.linear(x, self.k_proj.weight, self.k_proj.bias).view(b, s_x, self.num_kv_heads, 1, self.head_dim)
        v = F.linear(x, self.v_proj.weight, self.v_proj.bias).view(b, s_x, self.num_kv_heads, 1, self.head_dim)
        k = k.expand(b, s_x, self.num_kv_heads, q_per_kv, self.head_dim).reshape(b, s_x, -1, self.head_dim)
        v = v.expand(b, s_x, self.num_kv_heads, q_per_kv, self.head_dim).reshape(b, s_x, -1, self.head_dim)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        scale = self.head_dim ** 0.5
        attn = (q @ k.transpose(-2, -1)) * scale
        allowed = torch.ones(b, 1, s_x, s_x, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.tril(torch.ones(s_x, s_x, dtype=torch.bool, device=x.device))
        attn = attn.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, s_x, -1)
        return F.linear(out, self.o_proj.weight, self.o_proj.bias)
# bug-line: 33

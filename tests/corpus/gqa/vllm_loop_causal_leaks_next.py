# attnprep: gqa
# expect: mask_leak
# diagnosis: causal_leaks_next
"""vLLM reference-backend style: one sequence at a time, heads grouped by repeat_interleave, einsum;
the future is blocked with triu(diagonal=2), so each query also sees the next token."""

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.num_queries_per_kv = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim**-0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim)
        outs = []
        for b in range(B):
            qb = q[b].transpose(0, 1)  # (H, T, D)
            kb = k[b].transpose(0, 1).repeat_interleave(self.num_queries_per_kv, dim=0)
            vb = v[b].transpose(0, 1).repeat_interleave(self.num_queries_per_kv, dim=0)
            s = torch.einsum("hqd,hkd->hqk", qb, kb) * self.scale
            if is_causal:
                future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=2)
                s = s.masked_fill(future, float("-inf"))
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[b][None, None, :], float("-inf"))
            p = s.softmax(dim=-1)
            outs.append(torch.einsum("hqk,hkd->qhd", p, vb).reshape(T, -1))
        return self.o_proj(torch.stack(outs))
# bug-line: 35

# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled + missing_scale
"""InternLM2-style attention written from interview notes (中文注释): the KV heads are tiled with
.repeat(1, n_rep, 1, 1) (head h gets KV head h % G, not h // n_rep), and the 1/sqrt(d) is forgotten."""

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.n_rep = num_heads // num_kv_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.shape
        # 1. 投影并拆成多头
        xq = self.q_proj(x).view(bsz, seqlen, self.num_heads, self.head_dim).transpose(1, 2)
        xk = self.k_proj(x).view(bsz, seqlen, self.num_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.v_proj(x).view(bsz, seqlen, self.num_kv_heads, self.head_dim).transpose(1, 2)
        # 2. KV 头复制到和 Q 头一样多
        xk = xk.repeat(1, self.n_rep, 1, 1)
        xv = xv.repeat(1, self.n_rep, 1, 1)
        # 3. 注意力分数
        scores = torch.matmul(xq, xk.transpose(2, 3))
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        scores = torch.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, xv)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.o_proj(output)
# bug-line: 30, 33

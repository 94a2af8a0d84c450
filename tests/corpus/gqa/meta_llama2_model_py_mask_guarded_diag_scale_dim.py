# attnprep: gqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal + scale_d_model
"""Meta's original llama/model.py habits: ModelArgs-like attributes (n_heads, n_kv_heads, n_rep),
wq / wk / wv / wo renamed to the contract's names, repeat_kv by expand + reshape, and the additive
mask made only when there is more than one token (`if seqlen > 1:`), with start_pos as a default."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.dim = d_model
        self.n_local_heads = num_heads
        self.n_local_kv_heads = num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False, start_pos=0):
        bsz, seqlen, _ = x.shape
        mask = None
        if is_causal and seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device)
            mask = torch.triu(mask, diagonal=start_pos)
        xq = self.q_proj(x).view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = self.k_proj(x).view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xv = self.v_proj(x).view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        keys = repeat_kv(xk, self.n_rep).transpose(1, 2)
        values = repeat_kv(xv, self.n_rep).transpose(1, 2)
        xq = xq.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.dim)
        if mask is not None:
            scores = scores + mask
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        scores = F.dropout(scores, p=self.dropout, training=self.training)
        output = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.o_proj(output)
# bug-line: 40, 47

# attnprep: mha_fused
# expect: passed
"""nn.MultiheadAttention's own parameter layout, written out: in_proj_weight (3·E, E) and in_proj_bias
as bare Parameters, out_proj an nn.Linear, F.linear then chunk(3) in [q; k; v] order, as
F.multi_head_attention_forward's _in_projection_packed does for self-attention."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, tgt_len, E = x.shape
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        q, k, v = (t.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        attn_mask = torch.zeros(bsz, 1, tgt_len, tgt_len, dtype=x.dtype, device=x.device)
        if attention_mask is not None:
            attn_mask = attn_mask.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            attn_mask = attn_mask.masked_fill(torch.ones(tgt_len, tgt_len, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + attn_mask, dim=-1)
        attn = F.dropout(attn, p=self.dropout, training=self.training)
        out = (attn @ v).transpose(1, 2).reshape(bsz, tgt_len, E)
        return self.out_proj(out)

# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""fairseq's MultiheadAttention, self-attention only: [T, B, C] time-first, bmm over bsz * num_heads, key_padding_mask True = pad."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout_p = dropout
        self.k_proj = nn.Linear(d_model, d_model, bias=True)
        self.v_proj = nn.Linear(d_model, d_model, bias=True)
        self.q_proj = nn.Linear(d_model, d_model, bias=True)
        self.o_proj = nn.Linear(d_model, d_model, bias=True)  # out_proj

    def forward(self, x, attention_mask=None, is_causal=False):
        query = x.transpose(0, 1)  # Time x Batch x Channel
        tgt_len, bsz, embed_dim = query.size()
        key_padding_mask = None
        if attention_mask is not None:
            key_padding_mask = attention_mask
        attn_mask = None
        if is_causal:
            attn_mask = torch.triu(torch.full((tgt_len, tgt_len), float("-inf"), device=x.device, dtype=x.dtype), 1)

        q = self.q_proj(query) * self.scaling
        k = self.k_proj(query)
        v = self.v_proj(query)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        src_len = k.size(1)

        attn_weights = torch.bmm(q, k.transpose(1, 2))  # (bsz * num_heads, tgt_len, src_len)
        if attn_mask is not None:
            attn_weights += attn_mask.unsqueeze(0)
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool), float("-inf")
            )
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights_float = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        attn_weights = attn_weights_float.type_as(attn_weights)
        attn_probs = F.dropout(attn_weights, p=self.dropout_p, training=self.training)
        attn = torch.bmm(attn_probs, v)  # (bsz * num_heads, tgt_len, head_dim)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        attn = self.o_proj(attn)
        return attn.transpose(0, 1)
# bug-line: 30

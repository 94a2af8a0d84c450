# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""fairseq's MultiheadAttention forward: q scaled by head_dim ** -0.5, (tgt, bsz * heads, dim) folding
with contiguous().view().transpose(0, 1), bmm, key_padding_mask applied on a (bsz, heads, tgt, src)
view. fairseq's key_padding_mask is True at padding; the HF attention_mask is handed over as it is."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        query = x.transpose(0, 1)  # fairseq is time-first: (tgt_len, bsz, embed_dim)
        tgt_len, bsz, embed_dim = query.size()
        key_padding_mask = attention_mask
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(query)
        v = self.v_proj(query)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        src_len = k.size(1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        if is_causal:
            future = torch.triu(torch.ones(tgt_len, src_len, dtype=torch.bool, device=x.device), 1)
            attn_weights = attn_weights.masked_fill(future.unsqueeze(0), float("-inf"))
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool), float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights_float = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        attn_probs = F.dropout(attn_weights_float.type_as(attn_weights), p=self.dropout, training=self.training)
        attn = torch.bmm(attn_probs, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        return self.out_proj(attn).transpose(0, 1)
# bug-line: 27, 41

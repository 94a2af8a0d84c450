# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted
# The mistake: fairseq's key_padding_mask is True at padding; the contract's mask (True = real) is passed as it is.
# fairseq's MultiheadAttention habits: time-first (T, B, C) inside, q *= scaling in place, heads folded
# into the batch (bsz * num_heads, T, head_dim), key_padding_mask with True = pad.
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
        self.out_proj = nn.Linear(d_model, d_model, bias=True)

    def forward(self, x, attention_mask=None, is_causal=False):
        query = x.transpose(0, 1)  # (T, B, C)
        tgt_len, bsz, embed_dim = query.size()
        key_padding_mask = None if attention_mask is None else attention_mask
        attn_mask = None
        if is_causal:
            attn_mask = torch.triu(query.new_full((tgt_len, tgt_len), float("-inf")), 1)

        q = self.q_proj(query)
        k = self.k_proj(query)
        v = self.v_proj(query)
        q *= self.scaling

        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        src_len = k.size(1)

        attn_weights = torch.bmm(q, k.transpose(1, 2))
        if attn_mask is not None:
            attn_weights += attn_mask.unsqueeze(0)
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool), float("-inf")
            )
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights_float = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        attn_probs = F.dropout(attn_weights_float.type_as(attn_weights), p=self.dropout_p, training=self.training)
        attn = torch.bmm(attn_probs, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        attn = self.out_proj(attn)
        return attn.transpose(0, 1), attn_weights_float.view(bsz, self.num_heads, tgt_len, src_len)
# bug-line: 28

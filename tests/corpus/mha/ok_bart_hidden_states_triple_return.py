# attnprep: mha
# expect: passed
"""Correct: BART's attention subclassed (embed_dim, out_proj, q scaled before the product, heads folded into bmm rows), forward(hidden_states, ..., **kwargs) returning a 3-tuple."""
import torch
from torch import nn


class _BaseSelfAttention(nn.Module):
    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()


class BartLikeAttention(_BaseSelfAttention):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, hidden_states, attention_mask=None, is_causal=False, output_attentions=False, **kwargs):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if attention_mask is not None or is_causal:
            neg = torch.finfo(attn_weights.dtype).min
            mask = torch.zeros(bsz, 1, tgt_len, src_len, dtype=attn_weights.dtype, device=hidden_states.device)
            if is_causal:
                mask = mask.masked_fill(torch.ones(tgt_len, src_len, dtype=torch.bool, device=mask.device).triu(1), neg)
            if attention_mask is not None:
                mask = mask.masked_fill(~attention_mask[:, None, None, :], neg)
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output, (attn_weights if output_attentions else None), None


class MultiHeadAttention(BartLikeAttention):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__(d_model, num_heads, dropout=dropout)

# attnprep: mha_fused
# expect: wrong_output
# diagnosis: scale_inverted + dropout_in_eval
"""GPTBigCode / StarCoder habits: c_attn and c_proj (renamed to the contract's names), the config's
attn_pdrop as a class attribute, scale_attention_softmax_in_fp32 upcasting around the softmax, the
scale factor computed once in __init__ as a "norm factor"."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    attn_pdrop = 0.1
    scale_attention_softmax_in_fp32 = True

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.norm_factor = math.sqrt(self.head_dim)

    def _attn(self, query, key, value, attention_mask, is_causal):
        attn_weights = query @ key.transpose(-1, -2) * self.norm_factor
        T = query.shape[-2]
        if is_causal:
            causal_mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=query.device))
            attn_weights = torch.where(causal_mask, attn_weights, torch.full_like(attn_weights, -1e4))
        if attention_mask is not None:
            keep = attention_mask[:, None, None, :]
            attn_weights = torch.where(keep, attn_weights, torch.full_like(attn_weights, -1e4))
        input_dtype = attn_weights.dtype
        if self.scale_attention_softmax_in_fp32:
            attn_weights = attn_weights.float()
        attn_weights = F.softmax(attn_weights, dim=-1).to(input_dtype)
        attn_weights = F.dropout(attn_weights, p=self.attn_pdrop, training=True)
        return attn_weights @ value

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        query, key, value = self.qkv_proj(x).split(self.embed_dim, dim=2)
        query = query.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        key = key.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        value = value.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        attn_output = self._attn(query, key, value, attention_mask, is_causal)
        attn_output = attn_output.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(attn_output)
# bug-line: 28, 40

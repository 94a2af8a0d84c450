# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""fairseq-style: one float bias for the scores built by a module-level helper, the causal part with
torch.where first; the key padding sits in an `elif`, so with is_causal the padded keys are never
hidden (the non-causal padded cases are right)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def build_attn_bias(key_padding_mask, is_causal, tgt_len, src_len, device, dtype):
    bias = torch.zeros(tgt_len, src_len, device=device, dtype=dtype)
    if is_causal:
        seen = torch.ones(tgt_len, src_len, dtype=torch.bool, device=device).tril()
        bias = torch.where(seen, bias, torch.tensor(float("-inf"), device=device, dtype=dtype))
    elif key_padding_mask is not None:
        bias = bias.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
    return bias


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout_p = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, tgt_len, embed_dim = x.shape
        q = (self.q_proj(x) * self.scaling).view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(q, k.transpose(2, 3))
        attn_weights = attn_weights + build_attn_bias(attention_mask, is_causal, tgt_len, tgt_len, x.device, q.dtype)
        attn_probs = F.dropout(F.softmax(attn_weights, dim=-1), p=self.dropout_p, training=self.training)
        attn = torch.matmul(attn_probs, v).transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
        return self.out_proj(attn)
# bug-line: 18

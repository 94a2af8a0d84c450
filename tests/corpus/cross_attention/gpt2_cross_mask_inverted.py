# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted
# The mistake: the context mask added where it is True (real tokens), the padding left open.
# GPT-2's cross-attention: q_attn = Conv1D(d_model, d_model) for queries, c_attn = Conv1D(2·d_model,
# d_context) for keys and values from the encoder, c_proj; Conv1D keeps (in, out) weights, x @ W + b.
import math
import torch
import torch.nn as nn


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_attn = Conv1D(d_model, d_model)
        self.c_attn = Conv1D(2 * d_model, d_context)
        self.c_proj = Conv1D(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, x, context, context_mask=None):
        query = self._split_heads(self.q_attn(x))
        key, value = self.c_attn(context).split(self.embed_dim, dim=2)
        key, value = self._split_heads(key), self._split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if context_mask is not None:
            w = w + context_mask[:, None, None, :].to(w.dtype) * torch.finfo(w.dtype).min
        w = self.attn_dropout(nn.functional.softmax(w, dim=-1))
        a = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous()
        a = a.view(a.size()[:-2] + (self.embed_dim,))
        return self.c_proj(a)
# bug-line: 47

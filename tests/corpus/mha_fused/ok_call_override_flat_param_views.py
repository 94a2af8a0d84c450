# attnprep: mha_fused
# expect: passed
# __call__ overridden with no forward, and a qkv kept (3, d, d) in one parameter with a (3, d) bias
# (a stacked 3-d parameter the grader reads as the fused matrix).
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.W_qkv = nn.Parameter(torch.randn(3, d_model, d_model) / math.sqrt(d_model))
        self.b_qkv = nn.Parameter(torch.zeros(3, d_model))
        self.o_proj = nn.Linear(d_model, d_model)
        self.h = num_heads

    def __call__(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = torch.einsum("btc,soc->sbto", x, self.W_qkv) + self.b_qkv[:, None, None]
        q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in qkv)
        s = q @ k.transpose(-1, -2) / math.sqrt(C // self.h)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

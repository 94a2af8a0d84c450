# attnprep: mha
# expect: passed
# A custom torch.autograd.Function softmax (forward saves the output, backward y * (g - sum(g * y))),
# the way kernels are wrapped, used inside an ordinary MHA.
import math
import torch
import torch.nn as nn


class StableSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s):
        m = s.amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(dim=-1, keepdim=True))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.v_proj, self.o_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.h = num_heads
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.h
        q = self.q_proj(x).view(B, T, self.h, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, D).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        neg = torch.finfo(s.dtype).min
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None], neg)
        if is_causal:
            s = s.masked_fill(~torch.ones(T, T, device=x.device, dtype=torch.bool).tril(), neg)
        p = self.dropout(StableSoftmax.apply(s))
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))

# attnprep: cross_attention
# expect: passed
"""Correct: latent-diffusion's CrossAttention: bias-free to_q / to_k / to_v, to_out = Sequential(Linear, Dropout), heads folded into the batch, masked_fill_ with -finfo.max."""
import torch
from torch import nn, einsum


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


class CrossAttention(nn.Module):
    """latent-diffusion's CrossAttention: to_q/to_k/to_v without bias, to_out = Sequential(Linear, Dropout),
    heads folded into the batch (einops' rearrange written as reshape)."""

    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        dim_head = d_model // num_heads
        inner_dim = dim_head * num_heads
        context_dim = default(d_context, d_model)
        self.scale = dim_head ** -0.5
        self.heads = num_heads
        self.to_q = nn.Linear(d_model, inner_dim, bias=False)
        self.to_k = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, d_model), nn.Dropout(dropout))

    def forward(self, x, context, context_mask=None):
        h = self.heads
        q = self.to_q(x)
        context = default(context, x)
        k = self.to_k(context)
        v = self.to_v(context)
        # 'b n (h d) -> (b h) n d'
        q, k, v = map(lambda t: t.reshape(t.shape[0], t.shape[1], h, -1).permute(0, 2, 1, 3).reshape(t.shape[0] * h, t.shape[1], -1), (q, k, v))
        sim = einsum('b i d, b j d -> b i j', q, k) * self.scale
        if exists(context_mask):
            mask = context_mask.reshape(context_mask.shape[0], -1)          # 'b ... -> b (...)'
            max_neg_value = -torch.finfo(sim.dtype).max
            mask = mask[:, None, :].repeat_interleave(h, dim=0)             # 'b j -> (b h) () j'
            sim.masked_fill_(~mask, max_neg_value)
        attn = sim.softmax(dim=-1)
        out = einsum('b i j, b j d -> b i d', attn, v)
        out = out.reshape(-1, h, out.shape[1], out.shape[2]).permute(0, 2, 1, 3).flatten(2)  # '(b h) n d -> b n (h d)'
        return self.to_out(out)

# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm
"""gin-config habits by hand: a @configurable decorator fills keyword arguments from a bindings
string ("Block.norm_position = 'post'"), parsed once at import; the layer's norm position was bound
to "post" (the original Transformer) instead of "pre" (Llama)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BINDINGS_TEXT = """
Block.norm_position = 'post'
Block.mask_fill = -1e30
"""
BINDINGS = {}
for _line in BINDINGS_TEXT.strip().splitlines():
    _key, _value = (s.strip() for s in _line.split("=", 1))
    BINDINGS[_key] = eval(_value, {})


def configurable(name):
    def wrap(fn):
        def inner(self, *args, **kwargs):
            for key, value in BINDINGS.items():
                scope, arg = key.split(".")
                if scope == name:
                    kwargs.setdefault(arg, value)
            return fn(self, *args, **kwargs)
        return inner
    return wrap


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat((-b, a), -1)


class DecoderLayer(nn.Module):
    @configurable("Block")
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6,
                 norm_position="pre", mask_fill=float("-inf")):
        super().__init__()
        self.norm_position = norm_position
        self.mask_fill = mask_fill
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def attend(self, x, attention_mask):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, device=x.device).float() / self.hd)
        ang = torch.outer(torch.arange(T, device=x.device).float(), inv)
        ang = torch.cat((ang, ang), -1)
        q = q * ang.cos() + rotate_half(q) * ang.sin()
        k = k * ang.cos() + rotate_half(k) * ang.sin()
        k = k.repeat_interleave(self.nh // self.nkv, 1)
        v = v.repeat_interleave(self.nh // self.nkv, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        s = s.masked_fill(blocked, self.mask_fill)
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def ffn(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        if self.norm_position == "pre":
            h = x + self.attend(self.attn_norm(x), attention_mask)
            return h + self.ffn(self.ffn_norm(h))
        h = self.attn_norm(x + self.attend(x, attention_mask))
        return self.ffn_norm(h + self.ffn(h))
# bug-line: 14

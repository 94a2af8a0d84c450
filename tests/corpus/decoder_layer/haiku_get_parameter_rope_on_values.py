# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""Haiku-style parameters: the module declares them with get_parameter(name, shape, init) into an
nn.ParameterDict, everything is F.linear on bare (out, in) matrices, the norms are scales in the same
dict, RoPE and GQA written as small pure functions."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x, scale, eps):
    h = x.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * scale


def rope(x, theta):
    T, D = x.shape[-2:]
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    x1, x2 = x.chunk(2, dim=-1)
    return (x * ang.cos() + torch.cat([-x2, x1], dim=-1) * ang.sin()).to(x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g, self.dh = num_heads, num_kv_heads, d_model // num_heads
        self.theta, self.eps = rope_theta, eps
        self.params = nn.ParameterDict()
        kv = num_kv_heads * self.dh
        self.get_parameter_("attn_scale", (d_model,), nn.init.ones_)
        self.get_parameter_("wq", (d_model, d_model))
        self.get_parameter_("wk", (kv, d_model))
        self.get_parameter_("wv", (kv, d_model))
        self.get_parameter_("wo", (d_model, d_model))
        self.get_parameter_("ffn_scale", (d_model,), nn.init.ones_)
        self.get_parameter_("w_gate", (d_ff, d_model))
        self.get_parameter_("w_up", (d_ff, d_model))
        self.get_parameter_("w_down", (d_model, d_ff))

    def get_parameter_(self, name, shape, init=None):
        p = nn.Parameter(torch.empty(shape))
        if init is None:
            nn.init.normal_(p, std=1.0 / math.sqrt(shape[-1]))
        else:
            init(p)
        self.params[name] = p
        return p

    def attention(self, x, mask):
        P, (B, T, C) = self.params, x.shape
        q = F.linear(x, P["wq"]).view(B, T, self.h, self.dh).transpose(1, 2)
        k = F.linear(x, P["wk"]).view(B, T, self.g, self.dh).transpose(1, 2)
        v = F.linear(x, P["wv"]).view(B, T, self.g, self.dh).transpose(1, 2)
        q = rope(q, self.theta)
        v = rope(v, self.theta)
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if mask is not None:
            blocked = blocked | ~mask[:, None, None, :]
        s = s.masked_fill(blocked, float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return F.linear(o, P["wo"])

    def forward(self, x, attention_mask=None):
        P = self.params
        h = x + self.attention(rms_norm(x, P["attn_scale"], self.eps), attention_mask)
        n = rms_norm(h, P["ffn_scale"], self.eps)
        return h + F.linear(F.silu(F.linear(n, P["w_gate"])) * F.linear(n, P["w_up"]), P["w_down"])
# bug-line: 60

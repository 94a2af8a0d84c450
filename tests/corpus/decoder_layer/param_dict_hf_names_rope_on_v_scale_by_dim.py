# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors + scale_by_dim
"""Hugging Face's names kept as one flat state dict: every weight an entry of an nn.ParameterDict
keyed like a checkpoint with the dots replaced (self_attn__q_proj, mlp__gate_proj,
input_layernorm ...), the forward pure functions over it (F.linear, a `rms` helper, `rope` on
(B, H, T, D)). Two slips: the rotary is applied to q and v instead of q and k, and the scores are
divided by head_dim instead of its square root."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms(x, w, eps):
    h = x.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, theta):
    T, D = x.shape[-2], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=x.device).float() / D)
    f = torch.outer(torch.arange(T, device=x.device).float(), inv)
    cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat([-x2, x1], -1) * sin


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.theta, self.eps = rope_theta, eps
        kv = num_kv_heads * self.d
        shapes = {
            "input_layernorm": (d_model,), "post_attention_layernorm": (d_model,),
            "self_attn__q_proj": (d_model, d_model), "self_attn__k_proj": (kv, d_model),
            "self_attn__v_proj": (kv, d_model), "self_attn__o_proj": (d_model, d_model),
            "mlp__gate_proj": (d_ff, d_model), "mlp__up_proj": (d_ff, d_model), "mlp__down_proj": (d_model, d_ff),
        }
        self.sd = nn.ParameterDict({k: nn.Parameter(torch.ones(s) if len(s) == 1 else torch.randn(s) * 0.02)
                                    for k, s in shapes.items()})

    def forward(self, x, attention_mask=None):
        sd, B, T = self.sd, x.shape[0], x.shape[1]
        hs = rms(x, sd["input_layernorm"], self.eps)
        q = F.linear(hs, sd["self_attn__q_proj"]).view(B, T, self.h, self.d).transpose(1, 2)
        k = F.linear(hs, sd["self_attn__k_proj"]).view(B, T, self.g, self.d).transpose(1, 2)
        v = F.linear(hs, sd["self_attn__v_proj"]).view(B, T, self.g, self.d).transpose(1, 2)
        q, v = rope(q, self.theta), rope(v, self.theta)
        k = k.repeat_interleave(self.h // self.g, 1)
        v = v.repeat_interleave(self.h // self.g, 1)
        s = q @ k.transpose(-1, -2) / self.d
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        x = x + F.linear(o, sd["self_attn__o_proj"])
        hs = rms(x, sd["post_attention_layernorm"], self.eps)
        mlp = F.linear(F.silu(F.linear(hs, sd["mlp__gate_proj"])) * F.linear(hs, sd["mlp__up_proj"]), sd["mlp__down_proj"])
        return x + mlp
# bug-line: 50, 53

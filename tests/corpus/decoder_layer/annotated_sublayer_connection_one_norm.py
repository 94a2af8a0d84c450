# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm
"""The Annotated Transformer's DecoderLayer habits on a Llama block: a SublayerConnection(size)
module ("A residual connection followed by a layer norm. Note for code simplicity the norm is first
as opposed to last."), `self.sublayer = clones(SublayerConnection(size), 2)`, lambdas handed to it
(`self.sublayer[0](x, lambda x: self.self_attn(x, mask))`), subsequent_mask. The two connections'
norms are kept as attn_norm / ffn_norm for the contract, but both connections are given attn_norm."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class SublayerConnection(nn.Module):
    """A residual connection with the norm first."""

    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    def forward(self, x, sublayer):
        "Apply residual connection to any sublayer with the same size."
        return x + sublayer(self.norm(x))


def subsequent_mask(size, device):
    return torch.triu(torch.ones(1, size, size, device=device), diagonal=1) == 0


def rope(x, theta):
    B, H, T, D = x.shape
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=x.device).float() / D)
    f = torch.outer(torch.arange(T, device=x.device).float(), inv)
    emb = torch.cat((f, f), dim=-1)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return (x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()).type_as(x)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.kv, self.d_k, self.theta = num_heads, num_kv_heads, d_model // num_heads, rope_theta
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d_k, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d_k, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.sublayer = [SublayerConnection(self.attn_norm), SublayerConnection(self.attn_norm)]

    def self_attn(self, x, mask):
        B, T, C = x.shape
        q = rope(self.q_proj(x).view(B, T, self.h, self.d_k).transpose(1, 2), self.theta)
        k = rope(self.k_proj(x).view(B, T, self.kv, self.d_k).transpose(1, 2), self.theta)
        v = self.v_proj(x).view(B, T, self.kv, self.d_k).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask == 0, -1e9)
        p_attn = F.softmax(scores, dim=-1)
        return self.o_proj(torch.matmul(p_attn, v).transpose(1, 2).contiguous().view(B, T, C))

    def feed_forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        T = x.size(1)
        mask = subsequent_mask(T, x.device).unsqueeze(1)  # (1, 1, T, T)
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        x = self.sublayer[0](x, lambda x: self.self_attn(x, mask))
        return self.sublayer[1](x, self.feed_forward)
# bug-line: 66

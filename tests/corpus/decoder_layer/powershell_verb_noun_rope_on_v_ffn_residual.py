# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors + decoder_residual_missing
"""PowerShell habits: Verb-Noun function names (Get-RotaryTable -> Get_RotaryTable, Invoke_Attention,
Add_Residual) and named -Parameters as keywords; the rotation was applied to q and v (k left as it
was), and the feed-forward's output replaced h instead of being added to it."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def Get_RotaryTable(Length, Dim, Theta, Device):
    inv = 1.0 / Theta ** (torch.arange(0, Dim, 2, device=Device).float() / Dim)
    ang = torch.outer(torch.arange(Length, device=Device).float(), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def Invoke_Rotation(Tensor, Cos, Sin):
    half = Tensor.shape[-1] // 2
    turned = torch.cat([-Tensor[..., half:], Tensor[..., :half]], dim=-1)
    return Tensor * Cos + turned * Sin


def Add_Residual(Stream, Update):
    return Stream + Update


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.HeadCount, self.KvHeadCount = num_heads, num_kv_heads
        self.HeadDim = d_model // num_heads
        self.Theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.HeadDim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.HeadDim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def Invoke_Attention(self, Input, Mask):
        B, T, C = Input.shape
        H, G, D = self.HeadCount, self.KvHeadCount, self.HeadDim
        q = self.q_proj(Input).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(Input).view(B, T, G, D).transpose(1, 2)
        v = self.v_proj(Input).view(B, T, G, D).transpose(1, 2)
        Cos, Sin = Get_RotaryTable(Length=T, Dim=D, Theta=self.Theta, Device=Input.device)
        q = Invoke_Rotation(Tensor=q, Cos=Cos, Sin=Sin)
        v = Invoke_Rotation(Tensor=v, Cos=Cos, Sin=Sin)
        k = k.repeat_interleave(H // G, dim=1)
        v = v.repeat_interleave(H // G, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        allowed = torch.ones(T, T, dtype=torch.bool, device=Input.device).tril()
        if Mask is not None:
            allowed = allowed & Mask[:, None, None, :]
        scores = scores.masked_fill(~allowed, float("-inf"))
        return self.o_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def Invoke_FeedForward(self, Input):
        return self.w2(F.silu(self.w1(Input)) * self.w3(Input))

    def forward(self, x, attention_mask=None):
        h = Add_Residual(Stream=x, Update=self.Invoke_Attention(self.attn_norm(x), attention_mask))
        return self.Invoke_FeedForward(self.ffn_norm(h))
# bug-line: 66, 81

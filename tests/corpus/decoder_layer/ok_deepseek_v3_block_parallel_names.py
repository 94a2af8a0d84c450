# attnprep: decoder_layer
# expect: passed
"""DeepSeek-V3 inference/model.py's Block shape (attn_norm, attn, ffn_norm, ffn with w1/w2/w3 and
Column/RowParallelLinear classes at world_size 1), a GQA attention with complex halves RoPE."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

world_size = 1


class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=False, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=dtype))
        nn.init.normal_(self.weight, std=0.02)
        self.register_parameter("bias", None)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class ColumnParallelLinear(Linear):
    def __init__(self, in_features, out_features, bias=False, dtype=None):
        assert out_features % world_size == 0
        super().__init__(in_features, out_features // world_size, bias, dtype)


class RowParallelLinear(Linear):
    def __init__(self, in_features, out_features, bias=False, dtype=None):
        assert in_features % world_size == 0
        super().__init__(in_features // world_size, out_features, bias, dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x.float(), (self.dim,), None, self.eps).type_as(x) * self.weight


class MLP(nn.Module):
    def __init__(self, dim, inter_dim):
        super().__init__()
        self.w1 = ColumnParallelLinear(dim, inter_dim)
        self.w2 = RowParallelLinear(inter_dim, dim)
        self.w3 = ColumnParallelLinear(dim, inter_dim)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def apply_rotary_halves(x, freqs_cis):
    # rotate-half pairs (x[i], x[i + D/2]) as complex numbers
    D = x.shape[-1]
    xc = torch.complex(x[..., : D // 2].float(), x[..., D // 2:].float())
    y = xc * freqs_cis
    return torch.cat([y.real, y.imag], -1).type_as(x)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, theta):
        super().__init__()
        self.n_heads, self.n_kv, self.hd, self.theta = n_heads, n_kv_heads, dim // n_heads, theta
        self.wq = ColumnParallelLinear(dim, dim)
        self.wk = ColumnParallelLinear(dim, n_kv_heads * self.hd)
        self.wv = ColumnParallelLinear(dim, n_kv_heads * self.hd)
        self.wo = RowParallelLinear(dim, dim)

    def forward(self, x, mask):
        B, T, _ = x.shape
        freqs = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.float32, device=x.device) / self.hd))
        freqs_cis = torch.polar(torch.ones(T, self.hd // 2, device=x.device),
                                torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), freqs))
        q = self.wq(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        q, k = apply_rotary_halves(q, freqs_cis), apply_rotary_halves(k, freqs_cis)
        r = self.n_heads // self.n_kv
        k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
        scores = torch.einsum("bhsd,bhtd->bhst", q, k) * self.hd ** -0.5 + mask
        return self.wo(torch.einsum("bhst,bhtd->bshd", scores.softmax(-1), v).flatten(2))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.attn_norm = RMSNorm(d_model, eps)
        self.attn = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = MLP(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        mask = torch.full((T, T), float("-inf"), device=x.device).triu_(1).expand(B, 1, T, T)
        if attention_mask is not None:
            mask = mask.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        x = x + self.attn(self.attn_norm(x), mask)
        return x + self.ffn(self.ffn_norm(x))

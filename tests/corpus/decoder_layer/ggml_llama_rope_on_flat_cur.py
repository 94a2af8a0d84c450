# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_before_split
"""llama.cpp's llm_build_llama read into torch with ggml names (attn_norm, wq/wk/wv/wo, ffn_norm,
ffn_gate/ffn_up/ffn_down as w1/w3/w2, n_embd_head, n_head_kv, Qcur/Kcur), but ggml_rope_ext is
applied to Qcur / Kcur while they are still flat rows of n_embd (before ggml_reshape_3d), so the
rotation pairs features across the whole row instead of within each head."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, n_embd, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def ggml_rope_ext(cur, n_pos, n_dims, freq_base):
    inv = 1.0 / freq_base ** (torch.arange(0, n_dims, 2, device=cur.device).float() / n_dims)
    ang = torch.outer(torch.arange(n_pos, device=cur.device).float(), inv)
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    x1, x2 = cur[..., : n_dims // 2], cur[..., n_dims // 2:]
    return cur * cos + torch.cat([-x2, x1], -1) * sin


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_head, self.n_head_kv = num_heads, num_kv_heads
        self.n_embd_head = d_model // num_heads
        self.freq_base = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, num_kv_heads * self.n_embd_head, bias=False)
        self.wv = nn.Linear(d_model, num_kv_heads * self.n_embd_head, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x, attention_mask=None):
        B, n_tokens, n_embd = x.shape
        cur = self.attn_norm(x)
        Qcur, Kcur, Vcur = self.wq(cur), self.wk(cur), self.wv(cur)
        Qcur = ggml_rope_ext(Qcur, n_tokens, Qcur.shape[-1], self.freq_base)
        Kcur = ggml_rope_ext(Kcur, n_tokens, Kcur.shape[-1], self.freq_base)
        Qcur = Qcur.view(B, n_tokens, self.n_head, self.n_embd_head).transpose(1, 2)
        Kcur = Kcur.view(B, n_tokens, self.n_head_kv, self.n_embd_head).transpose(1, 2)
        Vcur = Vcur.view(B, n_tokens, self.n_head_kv, self.n_embd_head).transpose(1, 2)
        n_gqa = self.n_head // self.n_head_kv
        K = Kcur.repeat_interleave(n_gqa, dim=1)
        V = Vcur.repeat_interleave(n_gqa, dim=1)
        kq = Qcur @ K.transpose(-1, -2) * (1.0 / math.sqrt(self.n_embd_head))
        kq_mask = torch.ones(n_tokens, n_tokens, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            kq_mask = kq_mask & attention_mask[:, None, None, :]
        kq = kq.masked_fill(~kq_mask, float("-inf")).softmax(-1)
        cur = self.wo((kq @ V).transpose(1, 2).reshape(B, n_tokens, n_embd))
        inpFF = x + cur
        cur = self.ffn_norm(inpFF)
        cur = self.w2(F.silu(self.w1(cur)) * self.w3(cur))
        return inpFF + cur
# bug-line: 55, 56

# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""Buggy: queries scaled by 1/sqrt(d_model), not 1/sqrt(head_dim); a Flax port: DenseGeneral kernels kept in Flax's shapes, query/key/value kernels
(d_model, H, D) with (H, D) biases used as einsum('btc,chd->bthd'), the output kernel (H, D, d_model)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        H, D = num_heads, d_model // num_heads
        k = lambda *s: nn.Parameter(torch.randn(*s) / math.sqrt(d_model))  # noqa: E731
        self.query_kernel, self.query_bias = k(d_model, H, D), nn.Parameter(torch.zeros(H, D))
        self.key_kernel, self.key_bias = k(d_model, H, D), nn.Parameter(torch.zeros(H, D))
        self.value_kernel, self.value_bias = k(d_model, H, D), nn.Parameter(torch.zeros(H, D))
        self.out_kernel, self.out_bias = k(H, D, d_model), nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        T = x.shape[1]
        q = torch.einsum("btc,chd->bthd", x, self.query_kernel) + self.query_bias
        k = torch.einsum("btc,chd->bthd", x, self.key_kernel) + self.key_bias
        v = torch.einsum("btc,chd->bthd", x, self.value_kernel) + self.value_bias
        logits = torch.einsum("bqhd,bkhd->bhqk", q / math.sqrt(x.shape[-1]), k)
        ok = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            ok = ok.tril()
        ok = ok[None, None]
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, :]
        logits = torch.where(ok, logits, torch.finfo(logits.dtype).min)
        w = logits.softmax(-1)
        o = torch.einsum("bhqk,bkhd->bqhd", w, v)
        return torch.einsum("bqhd,hdc->bqc", o, self.out_kernel) + self.out_bias
# bug-line: 26

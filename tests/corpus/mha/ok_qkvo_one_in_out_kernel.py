# attnprep: mha
# expect: passed
"""One (d, 4d) kernel stored (in, out): x @ W[:, :3d] gives q, k, v; the merged heads go through
W[:, 3d:]. One (4d,) bias."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.kernel = nn.Parameter(torch.randn(d_model, 4 * d_model) / math.sqrt(d_model))
        self.bias = nn.Parameter(torch.zeros(4 * d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, C // self.num_heads
        qkv = x @ self.kernel[:, : 3 * C] + self.bias[: 3 * C]
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = [t.reshape(B, T, H, D).transpose(1, 2) for t in (q, k, v)]
        s = q @ k.transpose(2, 3) / math.sqrt(D)
        if attention_mask is not None:
            s = s.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.triu(torch.ones(T, T, device=x.device), 1).bool(), float("-inf"))
        p = s.softmax(-1)
        o = (p @ v).transpose(1, 2).reshape(B, T, C)
        return o @ self.kernel[:, 3 * C:] + self.bias[3 * C:]

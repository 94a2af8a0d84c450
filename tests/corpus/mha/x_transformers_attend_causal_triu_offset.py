# attnprep: mha
# expect: mask_leak
# diagnosis: causal_leaks_next
"""lucidrains/x-transformers habits: an `Attend` module that owns the softmax, `exists` / `default`
helpers, `dim_head` and `heads`, to_q / to_k / to_v / to_out, heads split by hand-written
rearrange-like helpers, the causal mask as `ones(i, j).triu(j - i + k)` (its offset for a cache)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def split_heads(t, h):  # 'b n (h d) -> b h n d'
    b, n, hd = t.shape
    return t.reshape(b, n, h, hd // h).permute(0, 2, 1, 3)


def merge_heads(t):  # 'b h n d -> b n (h d)'
    b, h, n, d = t.shape
    return t.permute(0, 2, 1, 3).reshape(b, n, h * d)


class Attend(nn.Module):
    def __init__(self, dropout=0.0, causal=False, scale=None):
        super().__init__()
        self.scale = scale
        self.causal = causal
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None, causal=None):
        causal = default(causal, self.causal)
        scale = default(self.scale, q.shape[-1] ** -0.5)
        i, j = q.shape[-2], k.shape[-2]
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * scale
        mask_value = -torch.finfo(sim.dtype).max
        if exists(mask):
            sim = sim.masked_fill(~mask[:, None, None, :], mask_value)
        if causal:
            causal_mask = torch.ones((i, j), dtype=torch.bool, device=sim.device).triu(j - i + 2)
            sim = sim.masked_fill(causal_mask, mask_value)
        attn = sim.softmax(dim=-1)
        attn = self.attn_dropout(attn)
        return torch.einsum("b h i j, b h j d -> b h i d", attn, v)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.heads = num_heads
        dim_head = d_model // num_heads
        inner_dim = dim_head * num_heads
        self.to_q = nn.Linear(d_model, inner_dim)
        self.to_k = nn.Linear(d_model, inner_dim)
        self.to_v = nn.Linear(d_model, inner_dim)
        self.attend = Attend(dropout=dropout)
        self.to_out = nn.Linear(inner_dim, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        h = self.heads
        q, k, v = (split_heads(fn(x), h) for fn in (self.to_q, self.to_k, self.to_v))
        out = self.attend(q, k, v, mask=attention_mask, causal=is_causal)
        return self.to_out(merge_heads(out))
# bug-line: 46

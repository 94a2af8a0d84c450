# attnprep: softcap
# expect: passed
"""An additive float mask (-1e9) built once, the cap as a small helper."""
import torch
import torch.nn.functional as F


def softcap_causal_mask(seq_len, device=None):
    return torch.tril(torch.ones((seq_len, seq_len), device=device)).bool()


def _cap(x, c):
    return c * torch.tanh(x / c)


def softcap_attention(q, k, v, softcap, attention_mask=None):
    T, D = q.size(-2), q.size(-1)
    s = _cap(q @ k.transpose(-1, -2) * D ** -0.5, softcap)
    allowed = softcap_causal_mask(T, q.device).expand(q.size(0), 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask.view(q.size(0), 1, 1, T)
    bias = torch.zeros_like(s[:, :1]).masked_fill(~allowed, -1e9)
    return F.softmax(s + bias, dim=-1) @ v

# attnprep: causal
# expect: passed
"""An additive float bias built once: 0 where allowed, -inf elsewhere, padding folded in with a
torch.where; bmm on (B*H, T, D)."""
import math
import torch


def causal_mask(seq_len, device=None):
    r = torch.arange(seq_len, device=device)
    return r.view(-1, 1) >= r.view(1, -1)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    ok = causal_mask(T, q.device).expand(B, 1, T, T)
    if attention_mask is not None:
        ok = ok & attention_mask.view(B, 1, 1, T)
    bias = torch.where(ok, 0.0, float("-inf")).expand(B, H, T, T).reshape(B * H, T, T)
    s = torch.baddbmm(bias, q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2), alpha=1 / math.sqrt(D))
    return torch.bmm(s.softmax(-1), v.reshape(B * H, T, D)).view(B, H, T, D)

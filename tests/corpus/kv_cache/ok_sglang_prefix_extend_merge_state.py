# attnprep: kv_cache
# expect: passed
"""Correct: SGLang's extend attention: the new tokens against the prefix (no mask) and against themselves (causal), merged by log-sum-exp (merge_state)."""
import torch
import torch.nn as nn


def _attn_with_lse(q, k, v, scale, causal_offset=None):
    """(out, lse) of one attention; q (B, H, T, D), k/v (B, H, S, D)."""
    s = torch.einsum("bhtd,bhsd->bhts", q, k) * scale
    if causal_offset is not None:
        T, S = s.shape[-2:]
        j = torch.arange(S, device=q.device)
        i = torch.arange(T, device=q.device)[:, None]
        s = s.masked_fill(j > i + causal_offset, float("-inf"))
    lse = torch.logsumexp(s, dim=-1, keepdim=True)
    return torch.einsum("bhts,bhsd->bhtd", torch.exp(s - lse), v), lse


def merge_state(o_a, lse_a, o_b, lse_b):
    """SGLang / FlashInfer merge of two partial attentions by their log-sum-exp."""
    lse = torch.logaddexp(lse_a, lse_b)
    return o_a * torch.exp(lse_a - lse) + o_b * torch.exp(lse_b - lse), lse


class KVCacheAttention(nn.Module):
    """Extend attention as SGLang splits it: the new tokens against the prefix (no mask) and against
    themselves (causal), merged by the log-sum-exp of each part."""

    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        rep = self.h // self.kv
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        scale = self.d ** -0.5
        out, lse = _attn_with_lse(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), scale, causal_offset=0)
        if cache is not None and cache[0].shape[2] > 0:
            pk, pv = cache
            o_pre, lse_pre = _attn_with_lse(q, pk.repeat_interleave(rep, 1), pv.repeat_interleave(rep, 1), scale)
            out, lse = merge_state(o_pre, lse_pre, out, lse)
            k, v = torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C)), (k, v)

# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next + missing_scale
"""causal_mask keeps one future key (tril with diagonal=1), and causal_attention, which uses it, also
forgets the 1/sqrt(D) scale."""

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril(diagonal=1).bool()


def causal_attention(q, k, v, attention_mask=None):
    T = q.size(-2)
    att = torch.einsum("bhid,bhjd->bhij", q, k)
    keep = causal_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    att = torch.where(keep, att, torch.finfo(att.dtype).min)
    return torch.einsum("bhij,bhjd->bhid", att.softmax(-1), v)

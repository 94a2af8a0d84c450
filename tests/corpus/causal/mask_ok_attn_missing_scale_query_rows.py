# attnprep: causal
# expect: mask_leak
# diagnosis: missing_scale + padding_mask_on_queries
"""causal_mask correct; causal_attention forgets the 1/sqrt(D) scale AND masks padded query rows (two mistakes in one object)."""

import torch


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None]


def causal_attention(q, k, v, attention_mask=None):
    T = q.size(-2)
    s = torch.einsum("bhid,bhjd->bhij", q, k)
    s = s.masked_fill(~causal_mask(T, q.device), float("-inf"))
    if attention_mask is not None:
        s = s.masked_fill(~attention_mask[:, None, :, None], float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", s.softmax(-1), v)

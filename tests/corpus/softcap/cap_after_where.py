# attnprep: softcap
# expect: mask_leak
# diagnosis: softcap_after_mask
"""The masks applied with torch.where first, the cap last, just before the softmax."""
import math

import torch


def softcap_causal_mask(seq_len: int, device=None) -> torch.Tensor:
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None]


def softcap_attention(q, k, v, softcap: float, attention_mask=None):
    B, H, T, D = q.shape
    logits = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    keep = softcap_causal_mask(T, q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    logits = torch.where(keep, logits, float("-inf"))
    logits = softcap * torch.tanh(logits / softcap)
    return torch.softmax(logits, dim=-1) @ v
# bug-line: 22

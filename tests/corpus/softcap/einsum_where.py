# attnprep: softcap
# expect: passed
"""einsum scores, torch.where with -inf, the cap written with math.sqrt."""
import math

import torch


def softcap_causal_mask(seq_len: int, device=None) -> torch.Tensor:
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None]


def softcap_attention(q, k, v, softcap: float, attention_mask=None):
    B, H, T, D = q.shape
    logits = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    logits = softcap * (logits / softcap).tanh()
    keep = softcap_causal_mask(T, q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask.bool()[:, None, None, :]
    logits = torch.where(keep, logits, torch.tensor(float("-inf"), device=q.device))
    probs = torch.softmax(logits, dim=-1)
    return torch.einsum("bhij,bhjd->bhid", probs, v)

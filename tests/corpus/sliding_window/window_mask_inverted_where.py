# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_mask_inverted
"""einsum on (B, T, H, D); the helper returns the blocked set while the caller treats it as allowed."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    causal = idx.unsqueeze(-1) >= idx.unsqueeze(0)
    local = idx.unsqueeze(-1) - window < idx.unsqueeze(0)
    return ~torch.logical_and(causal, local)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    q_, k_, v_ = (t.permute(0, 2, 1, 3) for t in (q, k, v))  # (B, T, H, D)
    T, D = q_.shape[1], q_.shape[-1]
    att = torch.einsum("bihd,bjhd->bhij", q_, k_) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = allowed[None, None] & attention_mask[:, None, None, :].bool()
    att = torch.where(~allowed, att, torch.tensor(float("-inf"), dtype=att.dtype, device=att.device))
    out = torch.einsum("bhij,bjhd->bihd", att.softmax(-1), v_)
    return out.permute(0, 2, 1, 3).contiguous()

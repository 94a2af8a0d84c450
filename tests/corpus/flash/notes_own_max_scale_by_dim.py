# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried + scale_by_dim
"""Interview notes: the running max is just the current block's max (m = s.max()), and the scores
are divided by D instead of sqrt(D): two mistakes at once."""
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    out = torch.empty_like(q)
    for i in range(0, L, block_size):
        qi = q[:, :, i:i + block_size]
        n = qi.shape[2]
        m = torch.full((B, H, n, 1), float("-inf"), device=q.device)
        l = torch.zeros(B, H, n, 1, device=q.device)
        o = torch.zeros(B, H, n, D, device=q.device)
        stop = min(i + n, S) if is_causal else S
        for j in range(0, stop, block_size):
            s = qi @ k[:, :, j:j + block_size].transpose(-1, -2) / D
            if is_causal:
                s = s.masked_fill(torch.arange(j, j + s.shape[-1], device=q.device) > torch.arange(i, i + n, device=q.device)[:, None], float("-inf"))
            m_new = s.max(dim=-1, keepdim=True).values  # block max
            p = (s - m_new).exp()
            a = (m - m_new).exp()
            l = a * l + p.sum(-1, keepdim=True)
            o = a * o + p @ v[:, :, j:j + block_size]
            m = m_new
        out[:, :, i:i + n] = o / l
    return out

# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried + missing_scale
"""A key-block scan written as a list of partial results folded at the end, each block's max taken
from that block alone (the running max never enters), and q never scaled."""
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, S = q.shape[-2], k.shape[-2]
    outs = []
    for i in range(0, L, block_size):
        qi = q[..., i:i + block_size, :]
        n = qi.shape[-2]
        m = torch.full(qi.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(qi.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
        stop = min(S, i + n) if is_causal else S
        for j in range(0, stop, block_size):
            s = qi @ k[..., j:j + block_size, :].transpose(-1, -2)
            if is_causal:
                r = torch.arange(i, i + n, device=q.device)[:, None]
                c = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_blk = s.amax(-1, keepdim=True)
            p = torch.exp(s - m_blk)
            a = torch.exp(m - m_blk)
            l = l * a + p.sum(-1, keepdim=True)
            acc = acc * a + p @ v[..., j:j + block_size, :]
            m = m_blk
        outs.append(acc / l)
    return torch.cat(outs, dim=-2)
# bug-line: 20, 25

# attnprep: flash
# expect: passed
# Keys split recursively in halves down to block_size, the two halves' (out, lse) merged; queries in
# tiles of block_size.
import math
import torch


def _attend(q, k, v, q0, k0, is_causal, block):
    S = k.shape[2]
    if S > block:
        half = (S // 2 + block - 1) // block * block
        o1, l1 = _attend(q, k[:, :, :half], v[:, :, :half], q0, k0, is_causal, block)
        o2, l2 = _attend(q, k[:, :, half:], v[:, :, half:], q0, k0 + half, is_causal, block)
        l = torch.logaddexp(l1, l2)
        w1 = torch.exp(l1 - l).nan_to_num(0.0)
        w2 = torch.exp(l2 - l).nan_to_num(0.0)
        return o1 * w1 + o2 * w2, l
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        rows = torch.arange(q0, q0 + q.shape[2], device=q.device)[:, None]
        cols = torch.arange(k0, k0 + S, device=q.device)[None, :]
        s = s.masked_fill(cols > rows, float("-inf"))
    m = s.amax(-1, keepdim=True)
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m_safe)
    z = e.sum(-1, keepdim=True)
    o = (e @ v) / z.clamp_min(1e-30)
    return o, torch.log(z) + m_safe


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L = q.shape[2]
    outs = []
    for i0 in range(0, L, block_size):
        o, _ = _attend(q[:, :, i0:i0 + block_size], k, v, i0, 0, is_causal, block_size)
        outs.append(o)
    return torch.cat(outs, dim=2)

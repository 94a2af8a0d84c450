# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""jax.experimental.pallas' flash-attention reference habits ported to torch: a `_flash_kernel` per
query block (`q_idx` as pl.program_id would give it), block_q / block_k, the number of key blocks to
visit computed with a ceiling division, `lax.fori_loop`-like body over kv_idx, the diagonal tile
masked with `kv_idx == q_idx` only. The causal count of key blocks is ceil((q_end + 1) / block_k):
one past the query block's last row, so the first tile after the diagonal is visited unmasked."""

import math

import torch


def _cdiv(a, b):
    return -(-a // b)


def _flash_kernel(q_blk, k, v, q_idx, block_q, block_k, causal, sm_scale):
    B, H, bq, D = q_blk.shape
    kv_seq_len = k.shape[2]
    m_i = torch.full((B, H, bq, 1), -math.inf, dtype=q_blk.dtype, device=q_blk.device)
    l_i = torch.zeros((B, H, bq, 1), dtype=q_blk.dtype, device=q_blk.device)
    o = torch.zeros((B, H, bq, D), dtype=q_blk.dtype, device=q_blk.device)
    q_end = q_idx * block_q + bq
    n_kv = min(_cdiv(kv_seq_len, block_k), _cdiv(q_end + 1, block_k)) if causal else _cdiv(kv_seq_len, block_k)
    for kv_idx in range(n_kv):
        k_blk = k[:, :, kv_idx * block_k:(kv_idx + 1) * block_k]
        v_blk = v[:, :, kv_idx * block_k:(kv_idx + 1) * block_k]
        s = (q_blk @ k_blk.transpose(-1, -2)) * sm_scale
        if causal and kv_idx == q_idx:
            span = torch.arange(s.shape[-1], device=s.device)
            s = torch.where(span[None, :] <= torch.arange(bq, device=s.device)[:, None], s, -math.inf)
        m_curr = s.amax(-1, keepdim=True)
        m_next = torch.maximum(m_i, m_curr)
        alpha = torch.exp(m_i - m_next)
        p = torch.exp(s - m_next)
        l_i = alpha * l_i + p.sum(-1, keepdim=True)
        o = alpha * o + p @ v_blk
        m_i = m_next
    return o / l_i


def flash_attention(q, k, v, is_causal=False, block_size=64):
    sm_scale = 1.0 / math.sqrt(q.shape[-1])
    L = q.shape[2]
    return torch.cat([_flash_kernel(q[:, :, i:i + block_size], k, v, i // block_size, block_size, block_size,
                                    is_causal, sm_scale) for i in range(0, L, block_size)], dim=2)
# bug-line: 26

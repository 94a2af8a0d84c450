# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_updated_before_rescale
"""JAX / Flax habits ported: the key loop written as `fori_loop(lower, upper, body_fn, carry)` with a
(m_i, l_i, acc) carry tuple, as jax.experimental.pallas' reference flash does; `body_fn` returns the
new carry. Inside it, m_i is replaced by the new max before the correction factor exp(m_i - m_new) is
taken, so the factor is always 1 and nothing accumulated is rescaled."""

import math

import torch


def fori_loop(lower, upper, body_fn, init_val):
    val = init_val
    for idx in range(lower, upper):
        val = body_fn(idx, val)
    return val


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    sm_scale = 1.0 / math.sqrt(D)
    n_kv = -(-S // block_size)
    out = []
    for start_q in range(0, L, block_size):
        q_blk = q[..., start_q:start_q + block_size, :]
        bq = q_blk.shape[-2]
        q_ids = torch.arange(start_q, start_q + bq, device=q.device)

        def body_fn(kv_idx, carry):
            m_i, l_i, acc = carry
            start_k = kv_idx * block_size
            k_blk = k[..., start_k:start_k + block_size, :]
            v_blk = v[..., start_k:start_k + block_size, :]
            s = (q_blk @ k_blk.transpose(-1, -2)) * sm_scale
            if is_causal:
                k_ids = torch.arange(start_k, start_k + k_blk.shape[-2], device=q.device)
                s = torch.where(k_ids[None, :] <= q_ids[:, None], s, float("-inf"))
            m_new = torch.maximum(m_i, s.max(dim=-1, keepdim=True).values)
            m_i = m_new
            p = torch.exp(s - m_new)
            alpha = torch.exp(m_i - m_new)
            l_i = alpha * l_i + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ v_blk
            return m_new, l_i, acc

        upper = min(n_kv, -(-(start_q + bq) // block_size)) if is_causal else n_kv
        init = (
            torch.full((B, H, bq, 1), float("-inf"), dtype=q.dtype, device=q.device),
            torch.zeros((B, H, bq, 1), dtype=q.dtype, device=q.device),
            torch.zeros((B, H, bq, D), dtype=q.dtype, device=q.device),
        )
        _, l_i, acc = fori_loop(0, upper, body_fn, init)
        out.append(acc / l_i)
    return torch.cat(out, dim=-2)
# bug-line: 42, 44

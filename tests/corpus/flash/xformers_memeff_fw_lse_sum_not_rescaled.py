# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled
"""xformers' memory-efficient naming: `_memory_efficient_attention_forward_requires_grad`-style
entry point, the running statistics called `lse`-side names (`m_i`, `l_i`, `out_i`), queries cut
into `q_i` chunks and keys into `k_j` chunks as in the cutlass kernel's reference loop. The output
accumulator is rescaled when the max grows, the running denominator l_i is not."""

import math

import torch


def _memory_efficient_attention_forward(query, key, value, causal, chunk):
    B, H, M, K = query.shape
    N = key.shape[2]
    scale = 1.0 / math.sqrt(K)
    out = []
    for q0 in range(0, M, chunk):
        q_i = query[:, :, q0:q0 + chunk]
        mq = q_i.shape[2]
        m_i = q_i.new_full((B, H, mq, 1), -float("inf"))
        l_i = q_i.new_zeros((B, H, mq, 1))
        out_i = q_i.new_zeros((B, H, mq, value.shape[-1]))
        last = min(N, q0 + mq) if causal else N
        for k0 in range(0, last, chunk):
            k_j, v_j = key[:, :, k0:k0 + chunk], value[:, :, k0:k0 + chunk]
            s_ij = torch.einsum("bhmk,bhnk->bhmn", q_i, k_j) * scale
            if causal:
                rows = q0 + torch.arange(mq, device=query.device)
                cols = k0 + torch.arange(k_j.shape[2], device=query.device)
                s_ij = s_ij.masked_fill(cols[None, :] > rows[:, None], -float("inf"))
            m_new = torch.maximum(m_i, s_ij.amax(-1, keepdim=True))
            p_ij = torch.exp(s_ij - m_new)
            corr = torch.exp(m_i - m_new)
            l_i = l_i + p_ij.sum(-1, keepdim=True)
            out_i = corr * out_i + torch.einsum("bhmn,bhnk->bhmk", p_ij, v_j)
            m_i = m_new
        out.append(out_i / l_i)
    return torch.cat(out, dim=2)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    return _memory_efficient_attention_forward(q, k, v, is_causal, block_size)
# bug-line: 36

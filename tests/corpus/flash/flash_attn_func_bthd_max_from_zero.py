# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""flash-attn's API by hand: flash_attn_func(q, k, v, softmax_scale=None, causal=False) on (batch, seqlen, nheads, headdim)."""
import torch


def _flash_attn_forward(q, k, v, softmax_scale, causal, block):
    # q, k, v: (batch, seqlen, nheads, headdim)
    batch, seqlen_q, nheads, d = q.shape
    seqlen_k = k.shape[1]
    out = torch.empty_like(q)
    for start_m in range(0, seqlen_q, block):
        qi = q[:, start_m:start_m + block].float() * softmax_scale  # (b, m, h, d)
        m_i = torch.zeros(batch, qi.shape[1], nheads, device=q.device)
        l_i = torch.zeros(batch, qi.shape[1], nheads, device=q.device)
        acc_o = torch.zeros(batch, qi.shape[1], nheads, d, device=q.device)
        end_n = min(seqlen_k, start_m + qi.shape[1]) if causal else seqlen_k
        for start_n in range(0, end_n, block):
            kj = k[:, start_n:start_n + block].float()
            vj = v[:, start_n:start_n + block].float()
            qk = torch.einsum("bmhd,bnhd->bmhn", qi, kj)
            if causal:
                offs_m = torch.arange(start_m, start_m + qi.shape[1], device=q.device)
                offs_n = torch.arange(start_n, start_n + kj.shape[1], device=q.device)
                qk = qk.masked_fill((offs_n[None, :] > offs_m[:, None])[None, :, None, :], float("-inf"))
            m_ij = torch.maximum(m_i, qk.amax(-1))
            p = torch.exp(qk - m_ij[..., None])
            l_ij = p.sum(-1)
            acc_o_scale = torch.exp(m_i - m_ij)
            acc_o = acc_o * acc_o_scale[..., None] + torch.einsum("bmhn,bnhd->bmhd", p, vj)
            l_i = l_i * acc_o_scale + l_ij
            m_i = m_ij
        out[:, start_m:start_m + block] = (acc_o / l_i[..., None]).to(q.dtype)
    return out


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, block=64):
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** (-0.5)
    return _flash_attn_forward(q, k, v, softmax_scale, causal, block)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    """(B, H, L, D) in and out, as the exercise wants; flash-attn's layout inside."""
    out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=is_causal, block=block_size)
    return out.transpose(1, 2)
# bug-line: 15

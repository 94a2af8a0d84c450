# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried + missing_scale
"""Apple ml-ane-transformers' (B, C, 1, S) layout: each head's queries and keys are turned into
(B*H, D, 1, L) channels-first tiles and the scores taken with einsum("bchq,bchk->bhqk"). Two slips:
the max is taken from the current tile alone (not the running max), and the scale 1/sqrt(D) of the
ANE reference (q * dim_per_head ** -0.5) is left out."""

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    # ANE layout: (B*H, C=D, 1, seq)
    q_ane = q.reshape(B * H, L, D).transpose(1, 2).unsqueeze(2)
    k_ane = k.reshape(B * H, S, D).transpose(1, 2).unsqueeze(2)
    v_ane = v.reshape(B * H, S, D).transpose(1, 2).unsqueeze(2)
    outs = []
    for i in range(0, L, block_size):
        qt = q_ane[..., i:i + block_size]
        bq = qt.shape[-1]
        m = torch.full((B * H, 1, bq, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B * H, 1, bq, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B * H, 1, bq, D), dtype=q.dtype, device=q.device)
        for j in range(0, S, block_size):
            if is_causal and j >= i + bq:
                break
            kt, vt = k_ane[..., j:j + block_size], v_ane[..., j:j + block_size]
            s = torch.einsum("bchq,bchk->bhqk", qt, kt)  # (B*H, 1, bq, bk)
            if is_causal:
                rows = torch.arange(i, i + bq, device=q.device).view(-1, 1)
                cols = torch.arange(j, j + kt.shape[-1], device=q.device).view(1, -1)
                s = s.masked_fill(cols > rows, float("-inf"))
            m_new = s.amax(dim=-1, keepdim=True)
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + torch.einsum("bhqk,bchk->bhqc", p, vt)
            m = m_new
        outs.append(acc / l)
    out = torch.cat(outs, dim=2)  # (B*H, 1, L, D)
    return out.reshape(B, H, L, D)
# bug-line: 21, 35

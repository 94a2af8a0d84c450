# attnprep: flash
# expect: passed
"""FlashAttention-1's Algorithm 1 transcribed: key/value blocks in the outer loop, query blocks
inside, the output kept normalised and renormalised by diag(l_new)^-1 (diag(l) e^(m - m_new) O + …).
Causal blocks are masked, never skipped."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, N, d = q.shape
    S = k.shape[-2]
    Br = Bc = block_size
    O = torch.zeros_like(q)
    l = torch.zeros(B, H, N, 1, dtype=q.dtype, device=q.device)
    m = torch.full((B, H, N, 1), float("-inf"), dtype=q.dtype, device=q.device)
    for j in range(0, S, Bc):
        Kj = k[:, :, j:j + Bc]
        Vj = v[:, :, j:j + Bc]
        for i in range(0, N, Br):
            Qi = q[:, :, i:i + Br]
            Oi, li, mi = O[:, :, i:i + Br], l[:, :, i:i + Br], m[:, :, i:i + Br]
            Sij = Qi @ Kj.transpose(-2, -1) / math.sqrt(d)
            if is_causal:
                row = torch.arange(i, i + Qi.shape[2], device=q.device).view(-1, 1)
                col = torch.arange(j, j + Kj.shape[2], device=q.device).view(1, -1)
                Sij = Sij.masked_fill(col > row, float("-inf"))
            mij = Sij.max(dim=-1, keepdim=True).values
            Pij = torch.exp(Sij - mij).nan_to_num(0.0)  # a fully masked row: exp(-inf - -inf)
            lij = Pij.sum(dim=-1, keepdim=True)
            mi_new = torch.maximum(mi, mij)
            li_new = torch.exp(mi - mi_new) * li + torch.exp(mij - mi_new).nan_to_num(0.0) * lij
            Oi_new = (li * torch.exp(mi - mi_new) * Oi + torch.exp(mij - mi_new).nan_to_num(0.0) * (Pij @ Vj)) / li_new
            O = torch.cat([O[:, :, :i], Oi_new.nan_to_num(0.0), O[:, :, i + Br:]], dim=2)
            l = torch.cat([l[:, :, :i], li_new, l[:, :, i + Br:]], dim=2)
            m = torch.cat([m[:, :, :i], mi_new, m[:, :, i + Br:]], dim=2)
    return O

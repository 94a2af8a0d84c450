# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""A Composer-callback style online softmax kept in a small state dict (m, l, acc) updated by a
nested closure; the running max starts from zeros like the other two buffers: with every score of a
row below zero, exp(s - 0) underflows and the row's sum is wrong (or 0 / 0)."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    softmax_scale = D ** -0.5
    out = []
    for qs in range(0, L, block_size):
        qb = q[:, :, qs:qs + block_size]
        n = qb.shape[2]
        state = {
            "m": torch.zeros(B, H, n, 1, dtype=q.dtype, device=q.device),
            "l": torch.zeros(B, H, n, 1, dtype=q.dtype, device=q.device),
            "acc": torch.zeros(B, H, n, D, dtype=q.dtype, device=q.device),
        }

        def update(scores, vb):
            m_new = torch.maximum(state["m"], scores.amax(-1, keepdim=True))
            p = torch.exp(scores - m_new)
            corr = torch.exp(state["m"] - m_new)
            state["l"] = state["l"] * corr + p.sum(-1, keepdim=True)
            state["acc"] = state["acc"] * corr + p @ vb
            state["m"] = m_new

        for ks in range(0, S, block_size):
            if is_causal and ks > qs + n - 1:
                break
            kb, vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            scores = (qb @ kb.transpose(-1, -2)) * softmax_scale
            if is_causal:
                qi = torch.arange(qs, qs + n, device=q.device)[:, None]
                kj = torch.arange(ks, ks + kb.shape[2], device=q.device)[None, :]
                scores = scores.masked_fill(kj > qi, -math.inf)
            update(scores, vb)
        out.append(state["acc"] / state["l"])
    return torch.cat(out, dim=2)
# bug-line: 22

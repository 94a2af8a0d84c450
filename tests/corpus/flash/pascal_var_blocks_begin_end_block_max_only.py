# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""A Pascal programmer's habits: every variable declared up front (a `var` block of None), while
loops with explicit counters, `{ begin } / { end }` comments around each block, procedure-like
helpers; the running max replaced by the current tile's max."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    # var
    Bsz, Heads, Lq, Dim = q.shape
    Sk = k.shape[2]
    qi = 0
    kj = 0
    Outs = []
    Scale = 1.0 / math.sqrt(Dim)
    # begin
    while qi < Lq:
        # { begin query block }
        Qb = q[:, :, qi : qi + block_size, :] * Scale
        Bq = Qb.shape[2]
        Mx = torch.full((Bsz, Heads, Bq, 1), -math.inf, dtype=q.dtype, device=q.device)
        Lsum = torch.zeros((Bsz, Heads, Bq, 1), dtype=q.dtype, device=q.device)
        Acc = torch.zeros((Bsz, Heads, Bq, Dim), dtype=q.dtype, device=q.device)
        if is_causal:
            Last = min(Sk, qi + Bq)
        else:
            Last = Sk
        kj = 0
        while kj < Last:
            # { begin key block }
            Kb = k[:, :, kj : kj + block_size, :]
            Vb = v[:, :, kj : kj + block_size, :]
            Sc = Qb @ Kb.transpose(2, 3)
            if is_causal:
                Rows = torch.arange(qi, qi + Bq, device=q.device).view(Bq, 1)
                Cols = torch.arange(kj, kj + Kb.shape[2], device=q.device).view(1, -1)
                Sc = Sc.masked_fill(Cols > Rows, -math.inf)
            MxNew = Sc.amax(dim=3, keepdim=True)
            P = torch.exp(Sc - MxNew)
            Corr = torch.exp(Mx - MxNew)
            Lsum = Lsum * Corr + P.sum(dim=3, keepdim=True)
            Acc = Acc * Corr + P @ Vb
            Mx = MxNew
            kj = kj + block_size  # kj := kj + block_size
            # { end key block }
        Outs.append(Acc / Lsum)
        qi = qi + block_size
        # { end query block }
    return torch.cat(Outs, dim=2)
    # end.
# bug-line: 42

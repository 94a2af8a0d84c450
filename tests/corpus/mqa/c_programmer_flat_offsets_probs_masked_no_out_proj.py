# attnprep: mqa
# expect: mask_leak
# diagnosis: mask_after_softmax + output_proj_skipped
"""Written by a C programmer: sizes as module-level "#define"-like constants computed once per call
into locals, a flat (B*H*T, D) buffer with hand-computed row offsets, `memset`-like zero_ on an
output buffer filled row block by row block, one loop over the batch and heads."""
import math

import torch
import torch.nn as nn

NEG_BIG = -1.0e30


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.nh = num_heads
        self.hs = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.hs)
        self.v_proj = nn.Linear(d_model, self.hs)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B = x.shape[0]
        T = x.shape[1]
        C = x.shape[2]
        NH = self.nh
        HS = self.hs
        qbuf = self.q_proj(x).view(B, T, NH, HS).permute(0, 2, 1, 3).reshape(B * NH * T, HS)
        kbuf = self.k_proj(x)  # (B, T, HS), one key head
        vbuf = self.v_proj(x)
        obuf = x.new_empty(B, T, NH * HS)
        obuf.zero_()
        inv = 1.0 / math.sqrt(HS)
        for b in range(B):
            for h in range(NH):
                off = (b * NH + h) * T
                qrow = qbuf[off:off + T]  # (T, HS)
                s = (qrow @ kbuf[b].T) * inv  # (T, T)
                if is_causal:
                    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), NEG_BIG)
                p = torch.softmax(s, dim=1)
                if attention_mask is not None:
                    p = p.masked_fill(~attention_mask[b][None, :], 0.0)
                p = self.drop(p)
                obuf[b, :, h * HS:(h + 1) * HS] = p @ vbuf[b]
        return obuf
# bug-line: 47, 50

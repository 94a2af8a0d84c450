# attnprep: sliding_window
# expect: wrong_output
# diagnosis:
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    allowed = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(seq_len):
        first = i - window + 1 if i - window + 1 > 0 else 0
        allowed[i, first:i + 1] = True
    return allowed


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    outs = []
    for i in range(T):  # one query row at a time, as a streaming decoder would
        lo = max(0, i - window + 2)
        ks, vs = k[:, :, lo:i + 1], v[:, :, lo:i + 1]
        s = (q[:, :, i:i + 1] @ ks.transpose(-2, -1)) / math.sqrt(D)
        if attention_mask is not None:
            keep = attention_mask[:, lo:i + 1].bool()[:, None, None, :]
            s = s.masked_fill(~keep, float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ vs)
    return torch.cat(outs, dim=2)
# bug-line: 21

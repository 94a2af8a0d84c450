# attnprep: attention_backward
# expect: passed
"""Correct: a two-pass blocked backward over key blocks of 4 (first pass: row max and sum; second: the
gradients), in float64, cast back."""
import math
import torch


def attention_backward(q, k, v, dout, is_causal=False):
    dt = q.dtype
    q, k, v, dout = q.double(), k.double(), v.double(), dout.double()
    B, H, L, D = q.shape
    S = k.shape[-2]
    sc = D ** -0.5
    rows = torch.arange(L, device=q.device)[:, None]

    def scores(j0, j1):
        j1 = min(j1, S)
        s = q @ k[:, :, j0:j1].transpose(-1, -2) * sc
        if is_causal:
            s = s.masked_fill(torch.arange(j0, j1, device=q.device)[None, :] > rows, -math.inf)
        return s

    m = torch.full((B, H, L, 1), -math.inf, dtype=q.dtype, device=q.device)
    for j in range(0, S, 4):
        m = torch.maximum(m, scores(j, j + 4).amax(-1, keepdim=True))
    l = torch.zeros_like(m)
    out = torch.zeros_like(q)
    for j in range(0, S, 4):
        e = torch.exp(scores(j, j + 4) - m)
        l += e.sum(-1, keepdim=True)
        out += e @ v[:, :, j:j + 4]
    out = out / l
    delta = (dout * out).sum(-1, keepdim=True)
    dq = torch.zeros_like(q)
    dk, dv = torch.zeros_like(k), torch.zeros_like(v)
    for j in range(0, S, 4):
        p = torch.exp(scores(j, j + 4) - m) / l
        dv[:, :, j:j + 4] = p.transpose(-1, -2) @ dout
        ds = p * (dout @ v[:, :, j:j + 4].transpose(-1, -2) - delta) * sc
        dq += ds @ k[:, :, j:j + 4]
        dk[:, :, j:j + 4] = ds.transpose(-1, -2) @ q
    return dq.to(dt), dk.to(dt), dv.to(dt)

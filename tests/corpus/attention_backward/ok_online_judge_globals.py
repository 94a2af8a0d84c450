# attnprep: attention_backward
# expect: passed
"""Written as for an online judge: module-level globals read by the function (NEG_INF, the rowsum
helper chosen by a global flag USE_FA2_DELTA), and a `main()` reading a case from stdin that only
runs as a script; the backward uses FlashAttention-2's delta = rowsum(dout * out): correct."""

import math
import sys

import torch

NEG_INF = float("-inf")
USE_FA2_DELTA = True


def _delta(dout, out, dP, P):
    global USE_FA2_DELTA
    return (dout * out).sum(-1, keepdim=True) if USE_FA2_DELTA else (dP * P).sum(-1, keepdim=True)


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    sm = 1.0 / math.sqrt(D)
    s = torch.matmul(q, k.transpose(-1, -2)) * sm
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).tril().logical_not(), NEG_INF)
    s = s - s.amax(-1, keepdim=True)
    P = s.exp()
    P = P / P.sum(-1, keepdim=True)
    out = P @ v
    dV = P.transpose(-1, -2) @ dout
    dP = dout @ v.transpose(-1, -2)
    dS = P * (dP - _delta(dout, out, dP, P))
    dQ = dS @ k * sm
    dK = dS.transpose(-1, -2) @ q * sm
    return dQ, dK, dV


def main():
    data = sys.stdin.read().split()
    B, H, L, S, D = map(int, data[:5])
    g = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(B, H, n, D, generator=g) for n in (L, S, S, L))
    for t in attention_backward(q, k, v, do):
        print(" ".join(f"{x:.6f}" for x in t.flatten().tolist()))


if __name__ == "__main__":
    main()

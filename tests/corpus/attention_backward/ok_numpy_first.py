# attnprep: attention_backward
# expect: passed
"""Correct: the backward in numpy float64 (中文 docstring), the results brought back with torch.from_numpy(...).to(the input's device and dtype)."""
import numpy as np
import torch


def _np(t):
    return t.detach().cpu().double().numpy()


def attention_backward(q, k, v, dout, is_causal=False):
    """numpy 写的反向：先算 P，再按 dS = P * (dP - rowsum(dP * P)) 推回去。"""
    Q, K, V, dO = map(_np, (q, k, v, dout))
    d = Q.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
    if is_causal:
        L, Sk = S.shape[-2:]
        S = np.where(np.tril(np.ones((L, Sk), dtype=bool)), S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (dP * P).sum(axis=-1, keepdims=True)) / np.sqrt(d)
    dQ = dS @ K
    dK = np.swapaxes(dS, -1, -2) @ Q
    back = lambda a, like: torch.from_numpy(np.ascontiguousarray(a)).to(device=like.device, dtype=like.dtype)  # noqa: E731
    return back(dQ, q), back(dK, k), back(dV, v)

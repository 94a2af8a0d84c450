# attnprep: sampling
# expect: passed
"""Correct: computed in numpy float64 (stable argsort, cumulative mass of the tokens above), converted back with torch.from_numpy(...).to(logits' device and dtype)."""
import numpy as np
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits.detach().cpu().double().numpy() / temperature
    B, V = z.shape
    keep = np.ones_like(z, dtype=bool)
    if top_k > 0:
        kth = np.sort(z, axis=-1)[:, V - top_k][:, None]
        keep &= z >= kth
    zk = np.where(keep, z, -np.inf)
    p = np.exp(zk - zk.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if top_p < 1.0:
        order = np.argsort(-p, axis=-1, kind="stable")
        sp = np.take_along_axis(p, order, -1)
        before = np.cumsum(sp, -1) - sp          # mass of the tokens ranked above
        keep_sorted = before < top_p
        k2 = np.zeros_like(keep)
        np.put_along_axis(k2, order, keep_sorted, -1)
        p = np.where(k2, p, 0.0)
        p /= p.sum(-1, keepdims=True)
    return torch.from_numpy(p).to(device=logits.device, dtype=logits.dtype)

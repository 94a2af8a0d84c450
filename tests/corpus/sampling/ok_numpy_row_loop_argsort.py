# attnprep: sampling
# expect: passed
# numpy habit: each row in numpy (float64), argsort descending, np.searchsorted for top-p, back to torch.
import numpy as np
import torch


def _row(z, top_k, top_p):
    z = z - z.max()
    V = z.shape[0]
    keep = np.ones(V, dtype=bool)
    if top_k > 0:
        kth = np.sort(z)[::-1][min(top_k, V) - 1]
        keep &= z >= kth
    p = np.where(keep, np.exp(z), 0.0)
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        c = np.cumsum(p[order])
        n = int(np.searchsorted(c, top_p, side="left")) + 1
        mask = np.zeros(V, dtype=bool)
        mask[order[:n]] = True
        p = np.where(mask, p, 0.0)
        p /= p.sum()
    return p


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = (logits.detach().double() / temperature).cpu().numpy()
    out = np.stack([_row(r, top_k, top_p) for r in z])
    return torch.from_numpy(out).to(device=logits.device, dtype=logits.dtype)

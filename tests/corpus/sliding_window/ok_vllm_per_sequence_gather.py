# attnprep: sliding_window
# expect: passed
"""Correct: per sample, the real keys gathered with their positions and the window tested on those positions; results written into a zeros_like output."""
import torch


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device).view(-1, 1)
    j = torch.arange(seq_len, device=device).view(1, -1)
    return (j <= i) & (j > i - window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    """Per-sequence loop like vLLM's reference: for each sample gather its real keys, keep their positions."""
    B, H, T, D = q.shape
    out = torch.zeros_like(q)
    pos = torch.arange(T, device=q.device)
    for b in range(B):
        real = torch.ones(T, dtype=torch.bool, device=q.device) if attention_mask is None else attention_mask[b]
        kb, vb, kpos = k[b][:, real], v[b][:, real], pos[real]          # (H, S, D), (S,)
        scores = torch.einsum("htd,hsd->hts", q[b], kb) * D ** -0.5
        ok = (kpos[None, :] <= pos[:, None]) & (kpos[None, :] > pos[:, None] - window)  # (T, S)
        scores = scores.masked_fill(~ok, float("-inf"))
        out[b] = torch.einsum("hts,hsd->htd", scores.softmax(-1), vb)
    return out

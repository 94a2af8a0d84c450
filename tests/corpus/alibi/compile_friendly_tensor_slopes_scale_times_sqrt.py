# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored + scale_inverted
"""torch.compile-friendly ALiBi: slopes from tensor ops only (no Python math, no list building),
the distance matrix from broadcast aranges, one torch.where for every mask."""
import torch


def alibi_slopes(num_heads):
    i = torch.arange(1, num_heads + 1, dtype=torch.float32)
    return torch.pow(torch.tensor(2.0), -8.0 * i / num_heads)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(device=q.device, dtype=q.dtype)
    pos = torch.arange(T, device=q.device)
    dist = (pos[:, None] - pos[None, :]).to(q.dtype)                   # (T, T) i - j
    scores = (q @ k.transpose(-1, -2)) * D ** 0.5
    scores = scores - slopes.view(1, H, 1, 1) * dist
    keep = (pos[None, :] <= pos[:, None]).view(1, 1, T, T)
    if attention_mask is not None:
        keep = keep & attention_mask.view(B, 1, 1, T)
    scores = torch.where(keep, scores, torch.finfo(scores.dtype).min)
    return scores.softmax(-1) @ v
# bug-line: 11, 19

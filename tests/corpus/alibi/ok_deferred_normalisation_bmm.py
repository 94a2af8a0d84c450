# attnprep: alibi
# expect: passed
"""Correct: (B*H) bmm, the ALiBi distance subtracted, -1e9 fills; the exp weights multiply v first and the row sums divide after (中文注释)."""
import math

import torch


def alibi_slopes(num_heads):
    def pow2(n):
        return [2 ** (-8 * (i + 1) / n) for i in range(n)]
    n = 1 << (num_heads.bit_length() - 1)
    extra = [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(pow2(n) + extra, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = torch.bmm(q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2)).view(B, H, T, T) / math.sqrt(D)
    dist = (torch.arange(T, device=q.device)[:, None] - torch.arange(T, device=q.device)[None, :]).to(s.dtype)
    s = s - alibi_slopes(H).to(device=q.device, dtype=s.dtype).view(1, H, 1, 1) * dist
    bad = (dist < 0)[None, None]
    if attention_mask is not None:
        bad = bad | ~attention_mask[:, None, None, :]
    s = s.masked_fill(bad, -1e9)
    w = torch.exp(s - s.max(-1, keepdim=True).values)            # 未归一化的权重
    out = torch.bmm(w.reshape(B * H, T, T), v.reshape(B * H, T, D)).view(B, H, T, D)
    return out / w.sum(-1, keepdim=True)                         # 最后再除以行和

# attnprep: alibi
# expect: mask_leak
# diagnosis: mask_fill_zero
"""A namespace class: staticmethod / classmethod members exported under the contract's names,
its constants (the masked value) as class attributes read through cls."""
import math

import torch


class ALiBi:
    masked_value = 0.0

    @staticmethod
    def slopes(num_heads):
        def geometric(n):
            return [2 ** (-8 * i / n) for i in range(1, n + 1)]

        n = 2 ** math.floor(math.log2(num_heads))
        extra = geometric(2 * n)[0::2][: num_heads - n]
        return torch.tensor(geometric(n) + extra, dtype=torch.float32)

    @classmethod
    def attention(cls, q, k, v, attention_mask=None):
        B, H, T, D = q.shape
        m = cls.slopes(H).to(q.device, q.dtype)[:, None, None]
        i = torch.arange(T, device=q.device)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D) - m * (i[:, None] - i[None, :])
        keep = (i[None, :] <= i[:, None])[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        scores = torch.where(keep, scores, cls.masked_value)
        return scores.softmax(-1) @ v


alibi_slopes = ALiBi.slopes
alibi_attention = ALiBi.attention
# bug-line: 12

# attnprep: alibi
# expect: passed
# 面经写法：斜率用 Python 循环，注意力一个头一个头地算
import math

import torch


def alibi_slopes(num_heads: int) -> torch.Tensor:
    # 先取不超过 H 的最大 2 的幂
    n = 1
    while n * 2 <= num_heads:
        n *= 2
    slopes = []
    for i in range(1, n + 1):
        slopes.append(2.0 ** (-8.0 * i / n))
    # 不是 2 的幂：补上 2n 个头的斜率里的奇数位置
    for i in range(1, num_heads - n + 1):
        slopes.append(2.0 ** (-4.0 * (2 * i - 1) / n))
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H)
    idx = torch.arange(T, device=q.device)
    dist = (idx.view(T, 1) - idx.view(1, T)).float()  # i - j
    mask = torch.tril(torch.ones(T, T, device=q.device)).bool()  # 因果掩码
    if attention_mask is not None:
        mask = mask.unsqueeze(0) & attention_mask.unsqueeze(1)  # (B, T, T)
    outs = []
    for h in range(H):
        s = q[:, h] @ k[:, h].transpose(-1, -2) / math.sqrt(D)  # (B, T, T)
        s = s - float(slopes[h]) * dist  # 线性偏置：越远扣得越多
        s = s.masked_fill(~mask, -1e9)
        p = torch.softmax(s, dim=-1)
        outs.append(p @ v[:, h])
    return torch.stack(outs, dim=1)  # (B, H, T, D)

# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero
"""CSDN 手撕 ALiBi 博客风格：拼音变量名（xielv 斜率、juli 距离、zhezhao 遮罩），中文注释。"""
import math
import torch
import torch.nn.functional as F


def alibi_slopes(num_heads):
    # 斜率：几何数列 2^(-8i/n)
    n = 2 ** math.floor(math.log2(num_heads))
    xielv = [2 ** (-8 * i / n) for i in range(n)]
    if n < num_heads:
        # 非 2 的幂：补上 2n 个头里的奇数位斜率
        xielv += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(xielv, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    pi, tou, chang, wei = q.shape  # 批、头、长度、维度
    defen = q @ k.transpose(-2, -1) / math.sqrt(wei)  # 注意力分数
    weizhi = torch.arange(chang, device=q.device)
    juli = (weizhi[:, None] - weizhi[None, :]).to(q.dtype)  # i - j
    xielv = alibi_slopes(tou).to(q.device, q.dtype)
    defen = defen - xielv.view(tou, 1, 1) * juli  # 距离越远罚得越多
    zhezhao = torch.tril(torch.ones(chang, chang, device=q.device)).bool()  # 因果遮罩
    if attention_mask is not None:
        zhezhao = zhezhao & attention_mask[:, None, None, :]  # 填充遮罩
    defen = defen.masked_fill(~zhezhao, -1e9)
    return F.softmax(defen, dim=-1) @ v
# bug-line: 13

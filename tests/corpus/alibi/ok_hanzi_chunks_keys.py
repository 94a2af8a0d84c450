# attnprep: alibi
# expect: passed
"""正确：斜率按论文；注意力按 key 分块计算再拼回（先算完整分数的分块写法），中文变量名。"""
import math
import torch


def alibi_slopes(num_heads):
    最近 = 2 ** math.floor(math.log2(num_heads))
    斜率 = [2 ** (-8 * i / 最近) for i in range(1, 最近 + 1)]
    斜率 += [2 ** (-4 * (2 * i - 1) / 最近) for i in range(1, num_heads - 最近 + 1)]
    return torch.tensor(斜率, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    斜率 = alibi_slopes(H).to(device=q.device, dtype=q.dtype)
    行 = torch.arange(T, device=q.device)
    分块 = []
    for 起 in range(0, T, 4):
        列 = 行[起:起 + 4]
        s = q @ k[:, :, 起:起 + 4].transpose(-1, -2) / math.sqrt(D)          # (B, H, T, c)
        距离 = (行[:, None] - 列[None, :]).to(q.dtype)
        s = s - 斜率[:, None, None] * 距离
        可见 = (列[None, :] <= 行[:, None])[None, None]
        if attention_mask is not None:
            可见 = 可见 & attention_mask[:, None, None, 起:起 + 4]
        分块.append(s.masked_fill(~可见, float("-inf")))
    权重 = torch.cat(分块, dim=-1).softmax(-1)
    return 权重 @ v

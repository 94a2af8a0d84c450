# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""牛客网风格的题解：中文注释，全局常量，手写 log-softmax（先减最大值）。忽略的位置损失置零了，
但求平均时除以了全部 token 数（包括被忽略的），而不是有效 token 数。"""

import torch

IGNORE = -100  # 默认的 ignore_index


def cross_entropy(logits, targets, ignore_index=IGNORE, label_smoothing=0.0):
    """题目：实现交叉熵损失（支持 ignore_index 与 label_smoothing）。"""
    V = logits.shape[-1]
    x = logits.reshape(-1, V).float()
    y = targets.reshape(-1)
    # 数值稳定：先减去每行最大值
    x = x - x.max(dim=-1, keepdim=True).values
    logp = x - x.exp().sum(dim=-1, keepdim=True).log()
    valid = y != ignore_index
    safe = torch.where(valid, y, torch.zeros_like(y))
    nll = -logp.gather(1, safe[:, None]).squeeze(1)
    smooth = -logp.mean(dim=-1)
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    loss = loss * valid
    return (loss.sum() / y.numel()).to(logits.dtype)
# bug-line: 26

# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + label_smoothing_over_v_minus_1
"""B 站「手写交叉熵」视频笔记：logsumexp 直接 log(sum(exp(x)))；标签平滑写成「目标类 1-ε，其余
V-1 个类平分 ε」。Two slips: no max subtracted before exp (overflow on large logits), and the
smoothing spread over the V - 1 other classes instead of all V."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x = logits.reshape(-1, V)
    y = targets.reshape(-1)
    # log p = x - log Σ exp(x)
    log_p = x - torch.log(torch.exp(x).sum(dim=-1, keepdim=True))
    valid = y != ignore_index
    y_safe = torch.where(valid, y, torch.zeros_like(y))
    # 平滑后的目标分布：目标类 1-ε，其他类 ε/(V-1)
    q = torch.full_like(x, label_smoothing / (V - 1))
    q.scatter_(1, y_safe[:, None], 1.0 - label_smoothing)
    loss = -(q * log_p).sum(-1)
    return loss[valid].mean()
# bug-line: 16, 20, 21

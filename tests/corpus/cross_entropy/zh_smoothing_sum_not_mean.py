# attnprep: cross_entropy
# expect: wrong_output
"""Chinese comments; label smoothing uses the SUM over the V classes of -log p where the mean belongs."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    x = logits.view(-1, V)  # (N, V)
    y = targets.view(-1)  # (N,)
    mx = x.max(dim=-1, keepdim=True).values  # 每行最大值，数值稳定
    logp = x - mx - torch.log(torch.exp(x - mx).sum(-1, keepdim=True))  # log-softmax
    mask = y.ne(ignore_index)  # 忽略的位置
    y_safe = torch.where(mask, y, torch.zeros_like(y))
    nll = -logp[torch.arange(x.shape[0], device=x.device), y_safe]  # 负对数似然
    if label_smoothing > 0:
        uniform = -logp.sum(dim=-1)  # 均匀分布部分
        nll = (1 - label_smoothing) * nll + label_smoothing * uniform
    nll = nll * mask  # 去掉忽略的位置
    return nll.sum() / mask.sum()
# bug-line: 18

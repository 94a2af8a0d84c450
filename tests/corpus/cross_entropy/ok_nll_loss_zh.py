# attnprep: cross_entropy
# expect: passed
"""面经写法：手写 log_softmax（先减最大值），再交给 F.nll_loss 处理 ignore_index 和求平均。"""
import torch
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    logits = logits.reshape(-1, V)  # (N, V)
    targets = targets.reshape(-1)  # (N,)
    # 数值稳定：减去每行最大值，exp 不会溢出
    z = logits - logits.max(dim=-1, keepdim=True).values
    logp = z - z.exp().sum(-1, keepdim=True).log()  # (N, V) log-softmax
    nll = F.nll_loss(logp, targets, ignore_index=ignore_index)  # 只对没被忽略的 target 求平均
    if label_smoothing == 0:
        return nll
    # 标签平滑：均匀分布那部分是所有 V 个类别上 -log p 的平均
    keep = targets != ignore_index
    smooth = -logp.mean(-1)[keep].mean()
    return (1 - label_smoothing) * nll + label_smoothing * smooth

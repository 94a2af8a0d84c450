# attnprep: cross_entropy
# expect: passed
"""Correct: Megatron's vocab-parallel cross-entropy with the vocab split in two shards and the all-reduces written as max / sum over them; smoothing from the shards' logit sums."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    """Megatron's vocab-parallel cross-entropy, with the vocab split into two 'ranks' and the
    all-reduces written as sums / maxima over the shards."""
    V = logits.shape[-1]
    flat = logits.reshape(-1, V).float()
    tgt = targets.reshape(-1)
    valid = tgt != ignore_index
    shards = torch.tensor_split(flat, 2, dim=-1)
    starts = [0, shards[0].shape[-1]]
    logits_max = torch.stack([s.max(dim=-1).values for s in shards]).max(dim=0).values      # all_reduce(MAX)
    predicted = torch.zeros_like(logits_max)
    sum_exp = torch.zeros_like(logits_max)
    sum_logits = torch.zeros_like(logits_max)
    for s, start in zip(shards, starts):
        s = s - logits_max[:, None]
        end = start + s.shape[-1]
        target_mask = (tgt < start) | (tgt >= end) | ~valid
        masked_target = (tgt - start).clamp(0, s.shape[-1] - 1)
        pred = s.gather(1, masked_target[:, None]).squeeze(1)
        predicted = predicted + pred.masked_fill(target_mask, 0.0)                           # all_reduce(SUM)
        sum_exp = sum_exp + s.exp().sum(-1)
        sum_logits = sum_logits + s.sum(-1)
    log_z = torch.log(sum_exp)
    nll = log_z - predicted
    if label_smoothing > 0:
        smooth = log_z - sum_logits / V                                                       # mean over V of -log p
        nll = (1.0 - label_smoothing) * nll + label_smoothing * smooth
    loss = (nll * valid).sum() / valid.sum()
    return loss.to(logits.dtype)

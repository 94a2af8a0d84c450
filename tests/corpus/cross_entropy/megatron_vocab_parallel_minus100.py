# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""Megatron's vocab_parallel_cross_entropy on one partition (logits_max, predicted_logits,
sum_exp_logits), then a loss_mask as Megatron's GPT data builds it, from the literal -100 it pads
labels with: the ignore_index argument is never read (right only for the default)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    vocab_parallel_logits = logits.reshape(-1, logits.size(-1))
    target = targets.reshape(-1)
    logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
    vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)
    loss_mask = (target != -100).float()
    masked_target = target.clone()
    masked_target[loss_mask == 0] = 0
    arange_1d = torch.arange(start=0, end=vocab_parallel_logits.size(0), device=logits.device)
    predicted_logits = vocab_parallel_logits[arange_1d, masked_target]
    exp_logits = torch.exp(vocab_parallel_logits)
    sum_exp_logits = exp_logits.sum(dim=-1)
    loss = torch.log(sum_exp_logits) - predicted_logits
    if label_smoothing > 0:
        log_probs = vocab_parallel_logits - torch.log(sum_exp_logits).unsqueeze(-1)
        smoothing_loss = -log_probs.mean(dim=-1)
        loss = (1.0 - label_smoothing) * loss + label_smoothing * smoothing_loss
    return torch.sum(loss * loss_mask) / loss_mask.sum()
# bug-line: 15

# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""Megatron-LM's _VocabParallelCrossEntropy on one partition: logits_max subtracted, the target logit
picked with a masked arange (the partition's vocab range), sum_exp_logits, and Megatron's label
smoothing, whose `smoothing` is rescaled by vocab_size / (vocab_size - 1)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    vocab_size = logits.size(-1)
    logits_2d = logits.reshape(-1, vocab_size).float()
    masked_target_1d = targets.reshape(-1)
    valid = masked_target_1d != ignore_index
    safe_target = torch.where(valid, masked_target_1d, torch.zeros_like(masked_target_1d))

    logits_max = logits_2d.max(dim=-1, keepdim=True).values
    vocab_parallel_logits = logits_2d - logits_max
    arange_1d = torch.arange(logits_2d.size(0), device=logits_2d.device)
    predicted_logits = vocab_parallel_logits[arange_1d, safe_target]
    exp_logits = vocab_parallel_logits.exp()
    sum_exp_logits = exp_logits.sum(dim=-1)
    loss = torch.log(sum_exp_logits) - predicted_logits               # nll per token

    if label_smoothing > 0:
        smoothing = label_smoothing * vocab_size / (vocab_size - 1)
        log_probs = vocab_parallel_logits - torch.log(sum_exp_logits).unsqueeze(-1)
        mean_log_probs = log_probs.mean(dim=-1)
        loss = (1.0 - smoothing) * loss - smoothing * mean_log_probs

    loss = torch.where(valid, loss, torch.zeros_like(loss))
    return (loss.sum() / valid.sum()).to(logits.dtype)
# bug-line: 26

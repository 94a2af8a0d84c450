# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""Megatron-core's VocabParallelCrossEntropy on one rank (tensor-parallel world size 1): the logits
max-subtracted in place, predicted_logits picked with a target mask, sum_exp_logits, and its label
smoothing rescaled by vocab_size / (vocab_size - 1) before mixing with the mean log-probability
(taken from the shifted logits, not log(exp / sum), which underflows)."""
import torch


def calculate_logits_max(vocab_parallel_logits):
    vocab_parallel_logits = vocab_parallel_logits.float()
    logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
    return vocab_parallel_logits, logits_max


def calculate_predicted_logits(vocab_parallel_logits, target, logits_max, vocab_start_index, vocab_end_index):
    vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)
    target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
    masked_target = target.clone() - vocab_start_index
    masked_target[target_mask] = 0
    logits_2d = vocab_parallel_logits.view(-1, vocab_parallel_logits.size(-1))
    arange_1d = torch.arange(start=0, end=logits_2d.size()[0], device=logits_2d.device)
    predicted_logits = logits_2d[arange_1d, masked_target.view(-1)].view_as(target)
    predicted_logits = predicted_logits.masked_fill(target_mask, 0.0)
    exp_logits = vocab_parallel_logits.exp()
    sum_exp_logits = exp_logits.sum(dim=-1)
    return target_mask, predicted_logits, sum_exp_logits, vocab_parallel_logits


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    vocab_size = logits.size(-1)
    logits, logits_max = calculate_logits_max(logits)
    _, predicted_logits, sum_exp_logits, shifted = calculate_predicted_logits(
        logits, targets, logits_max, 0, vocab_size)
    loss = torch.log(sum_exp_logits) - predicted_logits  # (B, T) or (N,)
    if label_smoothing > 0:
        smoothing = label_smoothing * vocab_size / (vocab_size - 1)
        log_probs = shifted - torch.log(sum_exp_logits).unsqueeze(dim=-1)
        mean_log_probs = log_probs.mean(dim=-1)
        loss = (1.0 - smoothing) * loss - smoothing * mean_log_probs
    keep = targets != ignore_index
    return loss.masked_fill(~keep, 0.0).sum() / keep.sum()
# bug-line: 38

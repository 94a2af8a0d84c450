# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""fairseq's label_smoothed_nll_loss (eps_i = epsilon / (V - 1), the target weighted 1 - eps - eps_i)
with a pad mask for ignore_index and a mean over the real targets. Without smoothing it is torch's."""
import torch
import torch.nn.functional as F


def label_smoothed_nll_loss(lprobs, target, epsilon, ignore_index):
    if target.dim() == lprobs.dim() - 1:
        target = target.unsqueeze(-1)
    pad_mask = target.eq(ignore_index)
    nll_loss = -lprobs.gather(dim=-1, index=target.masked_fill(pad_mask, 0))
    smooth_loss = -lprobs.sum(dim=-1, keepdim=True)
    nll_loss.masked_fill_(pad_mask, 0.0)
    smooth_loss.masked_fill_(pad_mask, 0.0)
    nll_loss = nll_loss.squeeze(-1)
    smooth_loss = smooth_loss.squeeze(-1)
    eps_i = epsilon / (lprobs.size(-1) - 1)
    loss = (1.0 - epsilon - eps_i) * nll_loss + eps_i * smooth_loss
    return loss, nll_loss


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    x = logits.reshape(-1, logits.size(-1))
    m = x.max(dim=-1, keepdim=True).values
    lprobs = x - m - (x - m).exp().sum(-1, keepdim=True).log()
    t = targets.reshape(-1)
    loss, _ = label_smoothed_nll_loss(lprobs, t, label_smoothing, ignore_index)
    return loss.sum() / t.ne(ignore_index).sum()
# bug-line: 20

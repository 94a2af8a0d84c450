# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_sum_not_mean
"""Everything as chained tensor methods: .exp().sum(-1).log(), .gather(...).squeeze(-1), .ne(),
.masked_fill, .mul / .add, no temporaries named after the maths."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    x = logits.float().flatten(0, -2)                          # (N, V)
    t = targets.flatten()                                      # (N,)
    keep = t.ne(ignore_index)
    logp = x.sub(x.exp().sum(-1, keepdim=True).log())          # (N, V)
    nll = logp.gather(-1, t.clamp(min=0).unsqueeze(-1)).squeeze(-1).neg()
    smooth = logp.mean(-1).neg()
    loss = nll.mul(1.0 - label_smoothing).add(smooth.mul(label_smoothing))
    return loss.masked_fill(~keep, 0.0).sum().to(logits.dtype)
# bug-line: 13, 17

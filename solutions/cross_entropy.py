"""Cross-entropy from logits, by hand: a numerically stable log-softmax, ignore_index and label
smoothing, as torch.nn.functional.cross_entropy computes them (reduction="mean").

log_softmax(x) = x - logsumexp(x), and logsumexp(x) = m + log(sum(exp(x - m))) with m the row max:
every exponent is <= 0, so exp never overflows (float32's exp overflows above ~88.7), and the log is
taken of a sum >= 1, so it never sees 0. log(softmax(x)) computes the same thing the long way and
underflows: a probability below ~1e-45 is 0 in float32, and log(0) = -inf.

A target equal to ignore_index (padding, the prompt in supervised fine-tuning) counts nowhere: not in
the sum, not in the count the sum is divided by. Label smoothing mixes the one-hot target with the
uniform distribution: (1 - eps) * nll + eps * (mean over all V classes of -log p).
"""

import torch


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """The mean over targets != ignore_index of -log softmax(logits)[target], smoothed as torch."""
    V = logits.size(-1)
    logits = logits.reshape(-1, V)  # (N, V): (B, T, V) flattened, as nanoGPT's view(-1, V)
    targets = targets.reshape(-1)  # (N,)
    m = logits.amax(dim=-1, keepdim=True)  # (N, 1): the largest logit of each row
    lse = m + torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))  # (N, 1): exponents <= 0, no overflow
    log_probs = logits - lse  # (N, V): log-softmax, never log(0)
    keep = targets != ignore_index  # (N,): ignored targets count nowhere
    safe = targets.masked_fill(~keep, 0)  # (N,): any valid class where ignored, so that gather can index
    nll = -log_probs.gather(-1, safe[:, None]).squeeze(-1)  # (N,): -log p[target], the target's negative log-likelihood
    loss = nll  # (N,)
    if label_smoothing > 0:
        smooth = -log_probs.mean(dim=-1)  # (N,): the mean over all V classes of -log p
        loss = (1 - label_smoothing) * nll + label_smoothing * smooth  # (N,)
    loss = loss.masked_fill(~keep, 0.0)  # (N,)
    return loss.sum() / keep.sum()  # 0-d: the mean over the targets that count

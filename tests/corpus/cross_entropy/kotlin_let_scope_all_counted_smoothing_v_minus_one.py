# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored + label_smoothing_over_v_minus_1
"""A Kotlin programmer's scope functions by hand (let(value, block)), every step a let; the smoothed
term spread over the other classes."""
import torch


def let(value, block):
    return block(value)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    flat = logits.reshape(-1, V).float()
    tgt = targets.reshape(-1)
    keep = tgt != ignore_index
    safe = tgt.masked_fill(~keep, 0)
    shifted = let(flat, lambda z: z - z.amax(dim=-1, keepdim=True))
    logp = let(shifted, lambda z: z - z.exp().sum(dim=-1, keepdim=True).log())
    picked = logp.gather(1, safe[:, None]).squeeze(1)
    nll = -picked
    eps = label_smoothing
    others = -(logp.sum(dim=-1) - picked) / (V - 1)
    loss = (1 - eps) * nll + eps * others
    loss = loss * keep
    return let(loss.sum() / loss.numel(), lambda t: t.to(logits.dtype))
# bug-line: 25, 27

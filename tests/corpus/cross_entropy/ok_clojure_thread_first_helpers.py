# attnprep: cross_entropy
# expect: passed
"""A Clojure programmer's threading macros by hand: `thread_first(x, (f, a, b), g)` calls each form
with the running value as its first argument (`->`), `thread_last` as its last (`->>`); small pure
helpers named like core functions (`juxt`, `partial` from functools, `identity`)."""
from functools import partial

import torch


def thread_first(value, *forms):
    for form in forms:
        if isinstance(form, tuple):
            fn, *args = form
            value = fn(value, *args)
        else:
            value = form(value)
    return value


def thread_last(value, *forms):
    for form in forms:
        if isinstance(form, tuple):
            fn, *args = form
            value = fn(*args, value)
        else:
            value = form(value)
    return value


identity = partial(lambda x: x)


def juxt(*fns):
    return lambda x: tuple(fn(x) for fn in fns)


def log_softmax_rows(z):
    m = z.amax(dim=-1, keepdim=True)
    return z - m - torch.log(torch.exp(z - m).sum(dim=-1, keepdim=True))


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    logp = thread_first(logits, (torch.reshape, (-1, V)), (torch.Tensor.to, torch.float32), log_softmax_rows)
    t = targets.reshape(-1)
    keep = t != ignore_index
    safe = torch.where(keep, t, torch.zeros_like(t))
    nll, smooth = juxt(
        lambda lp: -lp.gather(-1, safe[:, None]).squeeze(-1),
        lambda lp: -lp.mean(dim=-1),
    )(logp)
    per = (1.0 - label_smoothing) * nll + label_smoothing * smooth
    total = thread_last(per, (lambda zero, value: torch.where(keep, value, zero), torch.zeros_like(per)), torch.sum)
    return identity(total / keep.sum()).to(logits.dtype)

# attnprep: cross_entropy
# expect: error
# diagnosis: ignore_index_hardcoded
"""Heavy functools style: the loss as a `compose`d pipeline of small partials (flatten, shift by the
row max, log-normalise, pick), functools.reduce for the composition, operator.itemgetter on a dict of
intermediate tensors. The mask of kept targets compares with -100, the default, instead of the
ignore_index argument: with another ignore_index (say -1) the ignored targets are kept and gather
raises on the index -1."""

import functools
import operator

import torch


def compose(*fs):
    return functools.reduce(lambda f, g: lambda s: g(f(s)), fs)


def flatten(s):
    V = s["logits"].shape[-1]
    return {**s, "logits": s["logits"].reshape(-1, V), "targets": s["targets"].reshape(-1)}


def shift(s):
    return {**s, "z": s["logits"] - s["logits"].amax(-1, keepdim=True)}


def log_normalise(s):
    return {**s, "logp": s["z"] - s["z"].exp().sum(-1, keepdim=True).log()}


def pick(s):
    keep = s["targets"] != -100
    idx = s["targets"].masked_fill(~keep, 0)
    nll = -s["logp"].gather(-1, idx[:, None]).squeeze(-1)
    eps = s["eps"]
    loss = (1 - eps) * nll + eps * -s["logp"].mean(-1) if eps > 0 else nll
    return {**s, "loss": loss.masked_fill(~keep, 0.0), "keep": keep}


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    state = compose(flatten, shift, log_normalise, pick)(
        {"logits": logits, "targets": targets, "ignore": ignore_index, "eps": label_smoothing}
    )
    loss, keep = operator.itemgetter("loss", "keep")(state)
    return loss.sum() / keep.sum()
# bug-line: 34

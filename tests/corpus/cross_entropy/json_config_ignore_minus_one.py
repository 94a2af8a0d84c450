# attnprep: cross_entropy
# expect: error
# diagnosis: ignore_index_hardcoded
"""A JSON document (json.loads of a module string) of loss settings merged over the call's
arguments, the file's values winning; the document carried ignore_index -1, so the argument is
never read."""
import json

import torch

LOSS_JSON = '{"reduction": "mean", "ignore_index": -1}'


def settings(**call_args):
    merged = dict(call_args)
    merged.update(json.loads(LOSS_JSON))
    return merged


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    cfg = settings(ignore_index=ignore_index, label_smoothing=label_smoothing)
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    y = targets.reshape(-1)
    z = z - z.max(dim=-1, keepdim=True).values
    logp = z - z.exp().sum(dim=-1, keepdim=True).log()
    keep = y != cfg["ignore_index"]
    nll = -logp.gather(1, torch.where(keep, y, 0)[:, None])[:, 0]
    eps = cfg["label_smoothing"]
    loss = (1 - eps) * nll + eps * (-logp.mean(dim=-1))
    loss = torch.where(keep, loss, torch.zeros_like(loss))
    if cfg["reduction"] == "mean":
        return loss.sum() / keep.sum()
    return loss.sum()
# bug-line: 11

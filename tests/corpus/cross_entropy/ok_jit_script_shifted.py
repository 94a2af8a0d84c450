# attnprep: cross_entropy
# expect: passed
"""A TorchScript function (torch.jit.script, typed signature), the shift by the row max by hand."""
import torch
from torch import Tensor


@torch.jit.script
def cross_entropy(logits: Tensor, targets: Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> Tensor:
    n_cls = logits.size(-1)
    flat = logits.reshape(-1, n_cls)
    tgt = targets.reshape(-1)
    shifted = flat - flat.max(dim=-1, keepdim=True)[0]
    log_z = shifted.exp().sum(dim=-1, keepdim=True).log()
    logp = shifted - log_z
    valid = tgt != ignore_index
    picked = logp.gather(1, torch.where(valid, tgt, torch.zeros_like(tgt)).unsqueeze(1)).squeeze(1)
    per_tok = -picked
    if label_smoothing > 0.0:
        per_tok = (1.0 - label_smoothing) * per_tok - label_smoothing * logp.mean(dim=-1)
    per_tok = torch.where(valid, per_tok, torch.zeros_like(per_tok))
    return per_tok.sum() / valid.sum()

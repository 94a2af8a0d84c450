# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""torch.compile-friendly loss: no boolean indexing (data-dependent shapes), ignored targets clamped
to a valid class and zeroed with torch.where, everything flattened to (N, V) first."""
import torch


def _flatten(logits, targets):
    V = logits.shape[-1]
    return logits.reshape(-1, V), targets.reshape(-1)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    x, t = _flatten(logits, targets)
    x = x.float()
    valid = t != ignore_index                                   # (N,)
    safe_t = torch.where(valid, t, torch.zeros_like(t))         # no -100 reaches gather
    m = x.amax(dim=-1, keepdim=True)
    lse = (x - m).exp().sum(-1, keepdim=True).log() + m         # (N, 1)
    logp = x - lse                                              # (N, V)
    nll = -logp.gather(-1, safe_t[:, None]).squeeze(-1)         # (N,)
    smooth = -logp.mean(-1)                                     # (N,)
    per_tok = (1.0 - label_smoothing) * nll + label_smoothing * smooth
    per_tok = torch.where(valid, per_tok, torch.zeros_like(per_tok))
    denom = torch.full((), t.numel(), dtype=per_tok.dtype, device=per_tok.device)
    return (per_tok.sum() / denom).to(logits.dtype)
# bug-line: 26

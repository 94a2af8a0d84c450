# attnprep: sampling
# expect: wrong_output
# diagnosis:
"""A serving engine's sampler: each warper its own small function, applied in a fixed order
(temperature, top-k, top-p), the defaults typed from a chat model's generation_config.json
(top_p 0.95) instead of the contract's off switches."""
import torch

NEG_INF = float("-inf")


def _apply_temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    return logits / t


def _apply_top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    if k <= 0:
        return logits
    kth = logits.topk(k, dim=-1).values[..., -1, None]
    return logits.masked_fill(logits < kth, NEG_INF)


def _apply_top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    if p >= 1.0:
        return logits
    sorted_logits, idx = logits.sort(dim=-1, descending=True)
    sorted_probs = sorted_logits.softmax(dim=-1)
    remove_sorted = sorted_probs.cumsum(dim=-1) - sorted_probs >= p
    remove = remove_sorted.scatter(-1, idx, remove_sorted)
    return logits.masked_fill(remove, NEG_INF)


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 0.95) -> torch.Tensor:
    x = _apply_temperature(logits, temperature)
    x = _apply_top_k(x, top_k)
    x = _apply_top_p(x, top_p)
    return x.softmax(dim=-1)
# bug-line: 33

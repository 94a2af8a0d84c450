# attnprep: sampling
# expect: passed
"""Correct: a Sampler dataclass with properties for the switches, __call__ returns probabilities; top-k by
a threshold from sort, top-p by searchsorted on the cumulative sum."""
from dataclasses import dataclass

import torch


@dataclass
class Sampler:
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    @property
    def uses_top_k(self) -> bool:
        return self.top_k > 0

    @property
    def uses_top_p(self) -> bool:
        return self.top_p < 1.0

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        z = logits / self.temperature
        if self.uses_top_k:
            srt = z.sort(-1, descending=True).values
            z = z.masked_fill(z < srt[:, self.top_k - 1:self.top_k], float("-inf"))
        if self.uses_top_p:
            p = z.softmax(-1)
            sp, order = p.sort(-1, descending=True)
            cdf = sp.cumsum(-1)
            # number kept = index of the first cdf >= top_p, plus one
            n_keep = torch.searchsorted(cdf, torch.full((cdf.shape[0], 1), self.top_p, dtype=cdf.dtype, device=cdf.device)) + 1
            ranks = torch.arange(cdf.shape[-1], device=cdf.device).expand_as(cdf)
            keep_sorted = ranks < n_keep
            keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
            z = z.masked_fill(~keep, float("-inf"))
        return z.softmax(-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    return Sampler(temperature=temperature, top_p=top_p, top_k=top_k)(logits)

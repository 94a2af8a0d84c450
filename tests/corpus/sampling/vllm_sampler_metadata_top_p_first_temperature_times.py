# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k + temperature_multiplied
"""vLLM habits: a SamplingMetadata dataclass handed to a Sampler whose private _apply_* methods each
take and return logits (removed tokens at -inf); probabilities at the end."""
from dataclasses import dataclass

import torch


@dataclass
class SamplingMetadata:
    temperature: float
    top_k: int
    top_p: float


class Sampler:
    def _apply_temperature(self, logits, md):
        return logits * md.temperature

    def _apply_top_k(self, logits, k):
        if k <= 0 or k >= logits.shape[-1]:
            return logits
        kth = logits.topk(k, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < kth, float("-inf"))

    def _apply_top_p(self, logits, p):
        if p >= 1.0:
            return logits
        probs = logits.softmax(dim=-1)
        sorted_probs, idx = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass strictly before each token
        remove_sorted = before >= p
        remove = remove_sorted.scatter(-1, idx, remove_sorted)
        return logits.masked_fill(remove, float("-inf"))

    def __call__(self, logits, md):
        logits = self._apply_temperature(logits.float(), md)
        logits = self._apply_top_p(logits, md.top_p)
        logits = self._apply_top_k(logits, md.top_k)
        return logits.softmax(dim=-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    return Sampler()(logits, SamplingMetadata(temperature, top_k, top_p))
# bug-line: 20, 40, 41

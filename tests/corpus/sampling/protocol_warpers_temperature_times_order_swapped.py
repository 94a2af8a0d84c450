# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied + top_p_before_top_k
"""typing.Protocol for a warper (`__call__(logits) -> logits`), frozen dataclasses implementing it,
a `build_warpers` factory that returns the chain as a tuple in the order of an ORDER constant, removed tokens at -inf, one softmax at
the end."""
from dataclasses import dataclass
from typing import Protocol

import torch


class Warper(Protocol):
    def __call__(self, logits: torch.Tensor) -> torch.Tensor: ...


@dataclass(frozen=True)
class Temperature:
    t: float

    def __call__(self, logits):
        return logits * self.t


@dataclass(frozen=True)
class TopK:
    k: int

    def __call__(self, logits):
        kth = logits.topk(self.k, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < kth, float("-inf"))


@dataclass(frozen=True)
class TopP:
    p: float

    def __call__(self, logits):
        srt, order = logits.sort(dim=-1, descending=True)
        probs = srt.softmax(-1)
        drop = probs.cumsum(-1) - probs >= self.p
        return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


ORDER = ("temperature", "top_p", "top_k")


def build_warpers(temperature, top_k, top_p) -> tuple[Warper, ...]:
    make = {
        "temperature": lambda: Temperature(temperature),
        "top_k": lambda: TopK(top_k) if top_k > 0 else None,
        "top_p": lambda: TopP(top_p) if top_p < 1.0 else None,
    }
    return tuple(w for name in ORDER if (w := make[name]()) is not None)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    for warp in build_warpers(temperature, top_k, top_p):
        logits = warp(logits)
    return logits.softmax(dim=-1)
# bug-line: 22, 45

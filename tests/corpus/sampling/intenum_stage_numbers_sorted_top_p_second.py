# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""The warpers as a registry keyed by an IntEnum of stages, run in the enum's sorted order (`for stage
in sorted(Stage)`), each stage a small function of (logits, settings) in a frozen dataclass."""
from dataclasses import dataclass
from enum import IntEnum

import torch


class Stage(IntEnum):
    TEMPERATURE = 0
    TOP_P = 1
    TOP_K = 2


@dataclass(frozen=True)
class Settings:
    temperature: float
    top_k: int
    top_p: float


def _temperature(logits, s):
    return logits / s.temperature


def _top_k(logits, s):
    if s.top_k <= 0:
        return logits
    kth = torch.topk(logits, min(s.top_k, logits.size(-1)), dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def _top_p(logits, s):
    if s.top_p >= 1.0:
        return logits
    probs, order = torch.sort(torch.softmax(logits, dim=-1), dim=-1, descending=True)
    before = probs.cumsum(dim=-1) - probs
    remove = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, order, before >= s.top_p)
    return logits.masked_fill(remove, float("-inf"))


STAGES = {Stage.TEMPERATURE: _temperature, Stage.TOP_K: _top_k, Stage.TOP_P: _top_p}


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    settings = Settings(temperature, top_k, top_p)
    for stage in sorted(Stage):
        logits = STAGES[stage](logits, settings)
    return torch.softmax(logits, dim=-1)
# bug-line: 14, 15

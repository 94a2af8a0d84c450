# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_after_softmax
"""abc.ABC warpers with `__call__(scores)`, composed by a `WarperList`, probabilities produced by a
final `ToProbs` warper. The temperature warper was placed after ToProbs and divides the
probabilities by T, then renormalises: a no-op, so every tempered case is the untempered one."""

import abc

import torch


class Warper(abc.ABC):
    @abc.abstractmethod
    def __call__(self, scores): ...


class TopK(Warper):
    def __init__(self, k):
        self.k = k

    def __call__(self, scores):
        if self.k <= 0:
            return scores
        return scores.masked_fill(scores < scores.topk(self.k, -1).values[:, -1:], float("-inf"))


class TopP(Warper):
    def __init__(self, p):
        self.p = p

    def __call__(self, scores):
        if self.p >= 1.0:
            return scores
        probs = scores.softmax(-1)
        sp, idx = probs.sort(-1, descending=True)
        drop = (sp.cumsum(-1) - sp) >= self.p
        return scores.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), float("-inf"))


class ToProbs(Warper):
    def __call__(self, scores):
        return scores.softmax(-1)


class TemperatureOnProbs(Warper):
    def __init__(self, t):
        self.t = t

    def __call__(self, probs):
        probs = probs / self.t
        return probs / probs.sum(-1, keepdim=True)


class WarperList(list):
    def __call__(self, scores):
        for w in self:
            scores = w(scores)
        return scores


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    return WarperList([TopK(top_k), TopP(top_p), ToProbs(), TemperatureOnProbs(temperature)])(logits)
# bug-line: 63

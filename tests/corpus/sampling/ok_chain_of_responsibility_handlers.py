# attnprep: sampling
# expect: passed
"""The chain-of-responsibility pattern: each handler (temperature, top-k, top-p, normalise) does
its part to the logits and passes them to its successor set with set_next; the chain is built once
per call in the contract's order."""
import torch


class Handler:
    def __init__(self):
        self._next = None

    def set_next(self, handler):
        self._next = handler
        return handler

    def handle(self, logits):
        out = self.process(logits)
        return out if self._next is None else self._next.handle(out)

    def process(self, logits):
        return logits


class Temperature(Handler):
    def __init__(self, t):
        super().__init__()
        self.t = t

    def process(self, logits):
        return logits / self.t


class TopK(Handler):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def process(self, logits):
        if self.k <= 0 or self.k >= logits.shape[-1]:
            return logits
        kth = torch.topk(logits, self.k, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < kth, float("-inf"))


class TopP(Handler):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def process(self, logits):
        if self.p >= 1.0:
            return logits
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass strictly before each token
        drop_sorted = before >= self.p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        return logits.masked_fill(drop, float("-inf"))


class Normalise(Handler):
    def process(self, logits):
        return torch.softmax(logits, dim=-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    head = Temperature(temperature)
    head.set_next(TopK(top_k)).set_next(TopP(top_p)).set_next(Normalise())
    return head.handle(logits.float()).to(logits.dtype)

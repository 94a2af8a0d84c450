# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied + sampling_not_renormalised
"""A Sampler object configured through a context manager (with sampler.settings(temperature=…, top_k=…,
top_p=…): the previous settings restored on exit), its steps as methods that each take and return
probabilities; the filters zero probabilities rather than mask logits."""
import contextlib

import torch


class Sampler:
    def __init__(self):
        self.temperature, self.top_k, self.top_p = 1.0, 0, 1.0

    @contextlib.contextmanager
    def settings(self, **kw):
        saved = (self.temperature, self.top_k, self.top_p)
        for name, value in kw.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            self.temperature, self.top_k, self.top_p = saved

    def tempered(self, logits):
        return torch.softmax(logits.float() * self.temperature, dim=-1)

    def keep_top_k(self, p):
        if self.top_k <= 0:
            return p
        kth = torch.topk(p, self.top_k, dim=-1).values[..., -1:]
        p = torch.where(p >= kth, p, torch.zeros_like(p))
        return p / p.sum(-1, keepdim=True)

    def keep_top_p(self, p):
        if self.top_p >= 1.0:
            return p
        sp, idx = torch.sort(p, dim=-1, descending=True)
        before = torch.cumsum(sp, dim=-1) - sp
        sp = torch.where(before < self.top_p, sp, torch.zeros_like(sp))
        return torch.zeros_like(p).scatter(-1, idx, sp)

    def finish(self, p):
        return p


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    sampler = Sampler()
    with sampler.settings(temperature=temperature, top_k=top_k, top_p=top_p) as s:
        p = s.finish(s.keep_top_p(s.keep_top_k(s.tempered(logits))))
    return p.to(logits.dtype)
# bug-line: 27, 45

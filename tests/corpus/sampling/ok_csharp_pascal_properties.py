# attnprep: sampling
# expect: passed
"""C# habits: a Sampler class with PascalCase read-only properties (Temperature, TopK, TopP,
IsTopKEnabled), methods named ApplyTemperature / ApplyTopK / ApplyTopP / Normalize, and a static
factory FromArgs."""
import torch


class Sampler:
    def __init__(self, temperature, top_k, top_p):
        self._temperature = float(temperature)
        self._top_k = int(top_k)
        self._top_p = float(top_p)

    @staticmethod
    def FromArgs(temperature, top_k, top_p):
        return Sampler(temperature, top_k, top_p)

    @property
    def Temperature(self):
        return self._temperature

    @property
    def TopK(self):
        return self._top_k

    @property
    def TopP(self):
        return self._top_p

    @property
    def IsTopKEnabled(self):
        return self._top_k > 0

    @property
    def IsTopPEnabled(self):
        return self._top_p < 1.0

    def ApplyTemperature(self, logits):
        return logits / self.Temperature

    def ApplyTopK(self, logits):
        if not self.IsTopKEnabled:
            return logits
        kth = torch.topk(logits, self.TopK, dim=-1).values[..., -1, None]
        return logits.masked_fill(logits < kth, float("-inf"))

    def ApplyTopP(self, logits):
        if not self.IsTopPEnabled:
            return logits
        sorted_logits, order = torch.sort(logits, dim=-1, descending=False)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cum <= (1 - self.TopP)
        remove = remove_sorted.scatter(-1, order, remove_sorted)
        return logits.masked_fill(remove, float("-inf"))

    def Normalize(self, logits):
        return torch.softmax(logits, dim=-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    sampler = Sampler.FromArgs(temperature, top_k, top_p)
    return sampler.Normalize(sampler.ApplyTopP(sampler.ApplyTopK(sampler.ApplyTemperature(logits))))

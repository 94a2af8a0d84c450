# attnprep: sampling
# expect: passed
"""Correct: Hugging Face's warper classes verbatim with filter_value = finfo.min instead of -inf (exp underflows to exactly 0); 中文注释."""
import torch


class TemperatureLogitsWarper:
    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, scores):
        return scores / self.temperature


class TopKLogitsWarper:
    def __init__(self, top_k: int, filter_value: float, min_tokens_to_keep: int = 1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, scores):
        top_k = min(self.top_k, scores.size(-1))
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(indices_to_remove, self.filter_value)


class TopPLogitsWarper:
    def __init__(self, top_p: float, filter_value: float, min_tokens_to_keep: int = 1):
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        sorted_indices_to_remove[..., -self.min_tokens_to_keep:] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    fill = torch.finfo(logits.dtype).min      # 不用 -inf：exp(min - max) 在 float32 里就是 0
    warpers = [TemperatureLogitsWarper(temperature)]
    if top_k > 0:
        warpers.append(TopKLogitsWarper(top_k, fill))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p, fill))
    for w in warpers:
        logits = w(logits)
    return torch.softmax(logits, dim=-1)

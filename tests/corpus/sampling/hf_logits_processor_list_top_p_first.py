# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""Hugging Face's generation/logits_process.py re-typed: LogitsWarper classes with __call__(input_ids,
scores), TemperatureLogitsWarper, TopKLogitsWarper (`scores < torch.topk(scores, top_k)[0][..., -1,
None]`), TopPLogitsWarper with its ascending sort and `cumulative_probs <= (1 - top_p)`,
min_tokens_to_keep, filter_value = -inf, chained by a LogitsProcessorList. The list is built
temperature, top-p, top-k: the nucleus is taken over the whole vocabulary before top-k cuts it."""

import torch


class LogitsProcessorList(list):
    def __call__(self, input_ids, scores):
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class TemperatureLogitsWarper:
    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class TopKLogitsWarper:
    def __init__(self, top_k: int, filter_value: float = -float("Inf"), min_tokens_to_keep: int = 1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(indices_to_remove, self.filter_value)


class TopPLogitsWarper:
    def __init__(self, top_p: float, filter_value: float = -float("Inf"), min_tokens_to_keep: int = 1):
        self.top_p = float(top_p)
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

        # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        # Keep at least min_tokens_to_keep
        sorted_indices_to_remove[..., -self.min_tokens_to_keep :] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    warpers = LogitsProcessorList()
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    if top_k > 0:
        warpers.append(TopKLogitsWarper(top_k))
    scores = warpers(None, logits)
    return scores.softmax(dim=-1)
# bug-line: 64, 65, 66, 67

# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Kannada comments; the nucleus keeps the sorted tokens whose cumulative probability stays at or
below top_p, which drops the token that crosses it (the first is kept by hand)."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    # ತಾಪಮಾನ
    scores = logits / temperature
    # ಮೊದಲ k ಟೋಕನ್‌ಗಳು
    if top_k > 0:
        kth = scores.topk(min(top_k, scores.size(-1)), dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = scores.softmax(dim=-1)
    if top_p < 1.0:
        # ಸಂಚಿತ ಸಂಭವನೀಯತೆ
        sorted_p, idx = probs.sort(dim=-1, descending=True)
        cum = sorted_p.cumsum(dim=-1)
        keep_sorted = cum <= top_p
        keep_sorted[:, 0] = True
        keep = torch.zeros_like(keep_sorted).scatter(1, idx, keep_sorted)
        probs = probs * keep
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
# bug-line: 21

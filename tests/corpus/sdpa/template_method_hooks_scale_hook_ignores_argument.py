# attnprep: sdpa
# expect: wrong_output
# diagnosis: scale_argument_ignored
"""The template-method pattern: a base class fixes the algorithm (scores, scale, mask, normalise,
mix) and calls hooks a subclass overrides; the scale hook returns the default 1 / sqrt(E) whatever
scale the caller passed."""
import math

import torch


def softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


class AttentionTemplate:
    def run(self, query, key, value, attn_mask, is_causal, scale):
        scores = self.scores(query, key) * self.scale_hook(query, scale)
        scores = self.mask_hook(scores, attn_mask, is_causal)
        return self.mix_hook(self.normalise_hook(scores), value)

    def scores(self, query, key):
        return query @ key.transpose(-2, -1)

    def scale_hook(self, query, scale):
        raise NotImplementedError

    def mask_hook(self, scores, attn_mask, is_causal):
        return scores

    def normalise_hook(self, scores):
        return softmax(scores, dim=-1)

    def mix_hook(self, probs, value):
        return probs @ value


class TorchLikeAttention(AttentionTemplate):
    def scale_hook(self, query, scale):
        return 1.0 / math.sqrt(query.size(-1))

    def mask_hook(self, scores, attn_mask, is_causal):
        L, S = scores.shape[-2], scores.shape[-1]
        if is_causal:
            keep = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(~attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask
        return scores


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    return TorchLikeAttention().run(query, key, value, attn_mask, is_causal, scale)
# bug-line: 42

# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_unstable + scale_value_dim
"""Keras habits: a Softmax "layer" class with an axis attribute and a call() method (the functional
softmax delegates to it), the attention written as keras.layers.Attention's _calculate_scores /
_apply_scores pair with a scale computed from the value's last dim."""
import math

import torch


class Softmax:
    def __init__(self, axis=-1):
        self.axis = axis

    def call(self, inputs):
        e = torch.exp(inputs)
        return e / e.sum(dim=self.axis, keepdim=True)

    __call__ = call


def softmax(x, dim=-1):
    return Softmax(axis=dim)(x)


def _calculate_scores(query, key, scale):
    return torch.matmul(query, key.transpose(-1, -2)) * scale


def _apply_scores(scores, value, scores_mask=None, is_causal=False):
    if is_causal:
        L, S = scores.shape[-2], scores.shape[-1]
        causal = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if scores_mask is not None:
        if scores_mask.dtype == torch.bool:
            scores = scores.masked_fill(~scores_mask, float("-inf"))
        else:
            scores = scores + scores_mask
    weights = softmax(scores, dim=-1)
    return torch.matmul(weights, value)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(value.shape[-1])
    scores = _calculate_scores(query, key, scale)
    return _apply_scores(scores, value, scores_mask=attn_mask, is_causal=is_causal)
# bug-line: 17, 47

# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_max_wrong_dim + scale_argument_ignored
"""A shell programmer's habits: settings in an UPPERCASE environment-like dict filled with
`${VAR:-default}` fallbacks (`env_or(ENV, "SCALE", default)`), `[[ -n ... ]]` tests as comments, one
`local` line per variable; the softmax's max taken over dim 0 whatever `dim` says, and the SCALE
variable never exported into the environment the attention reads (the default always wins)."""
import math

import torch


def env_or(env, name, default):
    # ${NAME:-default}
    value = env.get(name)
    return default if value is None else value


def softmax(x, dim=-1):
    local_max = x.amax(dim=0, keepdim=True)
    local_exp = torch.exp(x - local_max)
    return local_exp / local_exp.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    ENV = {"CAUSAL": is_causal, "MASK": attn_mask}
    local_E = query.shape[-1]
    SCALE = env_or(ENV, "SCALE", 1.0 / math.sqrt(local_E))
    local_scores = torch.matmul(query, key.transpose(-2, -1)) * SCALE
    if env_or(ENV, "CAUSAL", False):  # [[ -n $CAUSAL ]]
        local_L, local_S = local_scores.shape[-2], local_scores.shape[-1]
        local_keep = torch.ones(local_L, local_S, dtype=torch.bool, device=query.device).tril()
        local_scores = local_scores.masked_fill(~local_keep, float("-inf"))
    MASK = env_or(ENV, "MASK", None)
    if MASK is not None:  # [[ -n $MASK ]]
        if MASK.dtype == torch.bool:
            local_scores = local_scores.masked_fill(MASK.logical_not(), float("-inf"))
        else:
            local_scores = local_scores + MASK
    return torch.matmul(softmax(local_scores, dim=-1), value)
# bug-line: 20, 26

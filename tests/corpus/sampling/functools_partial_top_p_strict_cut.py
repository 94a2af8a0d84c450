# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""functools style: each filter a functools.partial over a generic `filter_logits(logits, rule)`,
the pipeline folded with functools.reduce. The top-p rule keeps the sorted tokens whose cumulative
probability, the token's own included, stays <= top_p: the token that crosses top_p is dropped."""

import functools

import torch


def filter_logits(logits, rule):
    return logits.masked_fill(~rule(logits), float("-inf"))


def top_k_rule(logits, k):
    return logits >= logits.topk(k, dim=-1).values[:, -1:]


def top_p_rule(logits, p):
    probs, order = logits.softmax(-1).sort(dim=-1, descending=True)
    keep_sorted = probs.cumsum(-1) <= p
    keep_sorted[:, 0] = True
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    steps = [lambda z: z / temperature]
    if top_k > 0:
        steps.append(functools.partial(filter_logits, rule=functools.partial(top_k_rule, k=top_k)))
    if top_p < 1.0:
        steps.append(functools.partial(filter_logits, rule=functools.partial(top_p_rule, p=top_p)))
    return functools.reduce(lambda z, f: f(z), steps, logits).softmax(-1)
# bug-line: 23

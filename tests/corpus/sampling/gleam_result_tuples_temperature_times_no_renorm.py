# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied + sampling_not_renormalised
"""A Gleam programmer's habits: every stage returns a Result as an ("ok", value) or ("error", why)
tuple, a `try_` helper threads them like `use x <- result.try(...)`, and stages are small pure
functions; the logits multiplied by the temperature, and the nucleus's survivors left with their
old probabilities (not divided by the kept mass)."""
import torch


def ok(value):
    return ("ok", value)


def try_(result, next_fn):
    tag, value = result
    return next_fn(value) if tag == "ok" else result


def with_temperature(logits, temperature):
    if temperature <= 0:
        return ("error", "temperature must be positive")
    return ok(logits * temperature)


def with_top_k(logits, k):
    if k <= 0:
        return ok(logits)
    threshold = torch.topk(logits, min(k, logits.shape[-1]), dim=-1).values[:, -1:]
    return ok(torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf"))))


def to_probs(logits):
    return ok(torch.softmax(logits, dim=-1))


def with_top_p(probs, p):
    if p >= 1.0:
        return ok(probs)
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    kept_sorted = torch.where(mass_before < p, sorted_probs, torch.zeros_like(sorted_probs))
    kept = torch.zeros_like(probs).scatter(-1, order, kept_sorted)
    return ok(kept)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    result = try_(with_temperature(logits, temperature), lambda l: with_top_k(l, top_k))
    result = try_(result, to_probs)
    result = try_(result, lambda pr: with_top_p(pr, top_p))
    tag, value = result
    if tag != "ok":
        raise ValueError(value)
    return value
# bug-line: 23, 44

# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next + missing_scale
"""Publish / subscribe habits: a tiny event bus (subscribe(topic, handler), publish(topic, payload))
where each stage listens for the previous one's topic and publishes its result; the mask's band
reached one key past the diagonal, and the "scored" handler never divided by sqrt(D)."""
import torch
import torch.nn.functional as F


class Bus:
    def __init__(self):
        self.handlers = {}

    def subscribe(self, topic, handler):
        self.handlers.setdefault(topic, []).append(handler)

    def publish(self, topic, payload):
        for handler in self.handlers.get(topic, []):
            handler(payload)


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril(diagonal=1)


def causal_attention(q, k, v, attention_mask=None):
    bus, result = Bus(), {}
    T, D = q.shape[-2], q.shape[-1]

    def on_inputs(p):
        bus.publish("scored", p["q"] @ p["k"].transpose(-2, -1))

    def on_scored(s):
        ok = causal_mask(T, q.device)
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, :]
        bus.publish("masked", s.masked_fill(~ok, float("-inf")))

    def on_masked(s):
        result["out"] = F.softmax(s, dim=-1) @ v

    bus.subscribe("inputs", on_inputs)
    bus.subscribe("scored", on_scored)
    bus.subscribe("masked", on_masked)
    bus.publish("inputs", {"q": q, "k": k})
    return result["out"]
# bug-line: 24, 32

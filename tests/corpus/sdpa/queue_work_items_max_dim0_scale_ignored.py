# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_max_wrong_dim + scale_argument_ignored
"""queue.Queue habits: the attention is a list of work items put on a queue and drained by a
worker loop in the same thread, each item a (name, fn) pair reading and writing a shared state
dict; softmax's stabilising max was taken over dim 0, and the scale item ignored the argument."""
import math
import queue

import torch


def softmax(x, dim=-1):
    shift = x.amax(dim=0, keepdim=True)
    e = torch.exp(x - shift)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    state = {"q": query, "k": key, "v": value}
    work = queue.Queue()

    def scores():
        state["s"] = state["q"] @ state["k"].transpose(-2, -1)

    def scaled():
        state["s"] = state["s"] / math.sqrt(state["q"].shape[-1])

    def causal():
        L, S = state["s"].shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        state["s"] = state["s"].masked_fill(~keep, float("-inf"))

    def mask():
        if attn_mask.dtype == torch.bool:
            state["s"] = state["s"].masked_fill(~attn_mask, float("-inf"))
        else:
            state["s"] = state["s"] + attn_mask

    def mix():
        state["out"] = softmax(state["s"], dim=-1) @ state["v"]

    work.put(scores)
    work.put(scaled)
    if is_causal:
        work.put(causal)
    if attn_mask is not None:
        work.put(mask)
    work.put(mix)
    while not work.empty():
        work.get()()
        work.task_done()
    return state["out"]
# bug-line: 14, 27

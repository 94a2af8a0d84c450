# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied + top_p_before_top_k
"""llama.cpp's sampler chain ported: `llama_sampler_chain_add` appends stages to a list, each stage
a function over a `cur_p` candidates struct (a dict with logits and a `sorted` flag), applied in
order by `llama_sampler_apply`. Two slips: the temp stage multiplies the logits by the temperature
(`cur_p["logits"] * temp`), and the chain was assembled with top-p before top-k."""

import torch


def llama_sampler_temp(temp):
    def apply(cur_p):
        cur_p["logits"] = cur_p["logits"] * temp
        return cur_p
    return apply


def llama_sampler_top_k(k):
    def apply(cur_p):
        if k > 0:
            kth = cur_p["logits"].topk(k, dim=-1).values[..., -1:]
            cur_p["logits"] = cur_p["logits"].masked_fill(cur_p["logits"] < kth, float("-inf"))
        return cur_p
    return apply


def llama_sampler_top_p(p):
    def apply(cur_p):
        if p < 1.0:
            probs = cur_p["logits"].softmax(-1)
            sorted_p, order = probs.sort(dim=-1, descending=True)
            cum = sorted_p.cumsum(-1)
            keep_sorted = (cum - sorted_p) < p
            keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
            cur_p["logits"] = cur_p["logits"].masked_fill(~keep, float("-inf"))
        return cur_p
    return apply


def llama_sampler_chain_add(chain, smpl):
    chain.append(smpl)


def llama_sampler_apply(chain, logits):
    cur_p = {"logits": logits, "sorted": False}
    for smpl in chain:
        cur_p = smpl(cur_p)
    return cur_p["logits"].softmax(-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    chain = []
    llama_sampler_chain_add(chain, llama_sampler_temp(temperature))
    llama_sampler_chain_add(chain, llama_sampler_top_p(top_p))
    llama_sampler_chain_add(chain, llama_sampler_top_k(top_k))
    return llama_sampler_apply(chain, logits)
# bug-line: 14, 55

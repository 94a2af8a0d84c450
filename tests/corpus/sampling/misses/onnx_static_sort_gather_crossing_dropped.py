# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Export-friendly sampling (ONNX graph habits): top_k = 0 and top_p = 1.0 are not Python branches but
values that make the filters keep everything (k clamped to V, a threshold of +inf); one full sort
serves both filters, the keep mask is scattered back to vocabulary order."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    B, V = logits.shape
    z = logits.float() / temperature
    k_eff = V if top_k <= 0 else min(top_k, V)
    sorted_z, order = torch.sort(z, dim=-1, descending=True)                 # TopK(V)
    rank = torch.arange(V, device=z.device).expand(B, V)
    in_top_k = rank < k_eff                                                  # Less
    sorted_z = sorted_z.masked_fill(~in_top_k, float("-inf"))
    sorted_p = torch.softmax(sorted_z, dim=-1)
    cum = torch.cumsum(sorted_p, dim=-1)                                     # CumSum
    in_top_p = cum <= top_p
    in_top_p[:, 0] = True                                                    # the most probable always stays
    keep_sorted = in_top_k & in_top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)     # ScatterElements
    probs = torch.softmax(z.masked_fill(~keep, float("-inf")), dim=-1)
    return probs.to(logits.dtype)
# bug-line: 20

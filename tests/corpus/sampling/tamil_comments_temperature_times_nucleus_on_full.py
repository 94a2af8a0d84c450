# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied + top_p_before_top_k
"""தமிழ் கருத்துரைகள் (Tamil comments), 1-based reasoning carried over from a numerical course
(the k-th largest as column k), masks combined with &, every step a short capitalised name (P, Ps,
Idx, Kth); the logits multiplied by the temperature, and the nucleus measured on the full
distribution, not on what top-k left."""
import torch


def end_index(k):  # k-ஆவது நெடுவரிசை (1 முதல்) = பைத்தானில் k - 1
    return k - 1


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    Z = logits * temperature  # வெப்பநிலை
    Keep = torch.ones_like(Z, dtype=torch.bool)
    if top_k > 0:  # முதல் k சொற்கள் மட்டும்
        Kth = torch.sort(Z, dim=1, descending=True).values[:, end_index(top_k)][:, None]
        Keep = Keep & (Z >= Kth)
    if top_p < 1.0:  # நிகழ்தகவு நிறை top_p வரை
        P = torch.softmax(Z, dim=1)
        Ps, Idx = torch.sort(P, dim=1, descending=True)
        Before = torch.cumsum(Ps, dim=1) - Ps  # முன்னுள்ள சொற்களின் நிறை
        Keep = Keep & torch.zeros_like(Keep).scatter(1, Idx, Before < top_p)
    return torch.softmax(Z.masked_fill(~Keep, float("-inf")), dim=1)
# bug-line: 16, 22

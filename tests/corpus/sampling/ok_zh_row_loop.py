# attnprep: sampling
# expect: passed
"""面经写法：逐行处理，温度除在 logits 上，top-k 之后在剩下的 token 里做 top-p，最后重新归一化。"""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    B, V = logits.shape
    out = torch.zeros_like(logits)
    for b in range(B):
        z = logits[b] / temperature  # 温度作用在 logits 上
        keep = torch.ones(V, dtype=torch.bool, device=logits.device)
        if top_k > 0:
            kth = torch.sort(z, descending=True).values[top_k - 1]
            keep &= z >= kth  # 只留最大的 top_k 个
        if top_p < 1.0:
            p = torch.softmax(z.masked_fill(~keep, float("-inf")), dim=0)
            idx = torch.argsort(p, descending=True)
            total = 0.0
            nucleus = torch.zeros(V, dtype=torch.bool, device=logits.device)
            for i in idx.tolist():
                nucleus[i] = True  # 越过 top_p 的那个 token 也要留下
                total += float(p[i])
                if total >= top_p:
                    break
            keep &= nucleus
        e = torch.exp(z - z[keep].max()) * keep
        out[b] = e / e.sum()  # 重新归一化
    return out

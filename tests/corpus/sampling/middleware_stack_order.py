# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""Express / Koa middleware habits: a Pipeline with use(fn) registrations, each middleware taking
(ctx, next) and calling next(); the nucleus filter was registered before the top-k filter."""
import torch


class Pipeline:
    def __init__(self):
        self.stack = []

    def use(self, fn):
        self.stack.append(fn)
        return self

    def run(self, ctx):
        def dispatch(i):
            if i < len(self.stack):
                self.stack[i](ctx, lambda: dispatch(i + 1))
        dispatch(0)
        return ctx


def temperature(ctx, next):
    ctx["logits"] = ctx["logits"] / ctx["temperature"]
    next()


def top_k(ctx, next):
    k = ctx["top_k"]
    if k > 0:
        kth = ctx["logits"].topk(k, dim=-1).values[:, -1:]
        ctx["logits"] = ctx["logits"].masked_fill(ctx["logits"] < kth, float("-inf"))
    next()


def top_p(ctx, next):
    p = ctx["top_p"]
    if p < 1.0:
        probs = ctx["logits"].softmax(-1)
        sp, order = probs.sort(dim=-1, descending=True)
        drop_sorted = (sp.cumsum(-1) - sp) >= p
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        ctx["logits"] = ctx["logits"].masked_fill(drop, float("-inf"))
    next()


def finish(ctx, next):
    ctx["probs"] = ctx["logits"].softmax(-1)
    next()


APP = Pipeline().use(temperature).use(top_p).use(top_k).use(finish)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    ctx = {"logits": logits, "temperature": temperature, "top_k": top_k, "top_p": top_p}
    return APP.run(ctx)["probs"]
# bug-line: 54

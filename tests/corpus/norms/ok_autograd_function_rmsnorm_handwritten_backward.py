# attnprep: norms
# expect: passed
# Liger / apex style: RMSNorm and LayerNorm as torch.autograd.Functions with hand-written backwards,
# statistics in float32.
import torch
import torch.nn as nn


class _RMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        xhat = (xf * rstd).to(x.dtype)
        ctx.save_for_backward(x, w, rstd)
        return xhat * w

    @staticmethod
    def backward(ctx, dy):
        x, w, rstd = ctx.saved_tensors
        xf = x.float()
        xhat = xf * rstd
        dxhat = dy.float() * w.float()
        n = x.shape[-1]
        dx = rstd * (dxhat - xhat * (dxhat * xhat).sum(-1, keepdim=True) / n)
        dw = (dy.float() * xhat.to(x.dtype).float()).reshape(-1, n).sum(0)
        return dx.to(x.dtype), dw.to(w.dtype), None


class _LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, eps):
        xf = x.float()
        mu = xf.mean(-1, keepdim=True)
        var = (xf - mu).pow(2).mean(-1, keepdim=True)
        rstd = torch.rsqrt(var + eps)
        xhat = (xf - mu) * rstd
        ctx.save_for_backward(x, w, mu, rstd)
        return xhat.to(x.dtype) * w + b

    @staticmethod
    def backward(ctx, dy):
        x, w, mu, rstd = ctx.saved_tensors
        n = x.shape[-1]
        xhat = (x.float() - mu) * rstd
        g = dy.float() * w.float()
        dx = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
        dw = (dy.float() * xhat.to(x.dtype).float()).reshape(-1, n).sum(0)
        db = dy.float().reshape(-1, n).sum(0)
        return dx.to(x.dtype), dw.to(w.dtype), db.to(w.dtype), None


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return _RMSNormFn.apply(x, self.weight, self.eps)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return _LayerNormFn.apply(x, self.weight, self.bias, self.eps)

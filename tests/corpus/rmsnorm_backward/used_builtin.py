# attnprep: rmsnorm_backward
# expect: used_builtin
# diagnosis: used_builtin
"""torch.autograd.grad of the forward: autograd does the exercise."""
import torch


def rmsnorm_backward(x, weight, dout, eps=1e-6):
    with torch.enable_grad():
        x, weight = x.detach().requires_grad_(), weight.detach().requires_grad_()
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
        return torch.autograd.grad(y, (x, weight), dout)

# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
"""The activation chosen by name from a YAML-dict model config (hidden_act, as a config.json /
config.yaml gives it) through an ACT2FN-style table of the activations a model zoo supports."""
import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_YAML = {
    "model": {
        "mlp": {"hidden_act": "gelu_pytorch_tanh", "bias": False},
    },
}

ACT2FN = {
    "silu": F.silu,
    "swish": F.silu,
    "gelu": F.gelu,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, config=MODEL_YAML):
        super().__init__()
        mlp = config["model"]["mlp"]
        self.w1 = nn.Linear(d_model, d_ff, bias=mlp["bias"])
        self.w3 = nn.Linear(d_model, d_ff, bias=mlp["bias"])
        self.w2 = nn.Linear(d_ff, d_model, bias=mlp["bias"])
        self.act_fn = ACT2FN[mlp["hidden_act"]]

    def forward(self, x):
        return self.w2(self.act_fn(self.w1(x)) * self.w3(x))
# bug-line: 12

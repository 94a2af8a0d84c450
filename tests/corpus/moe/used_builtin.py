# attnprep: moe
# expect: used_builtin
# diagnosis: used_builtin
"""Imports the reference instead of writing it."""

import torch
import torch.nn as nn

from attnprep.solutions.moe import MoE as _Ref


class MoE(_Ref):
    pass

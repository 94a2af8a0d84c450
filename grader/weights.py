"""Seeded weights for the contract's roles, and the map from the attempt's layers to those roles.

Every role of the contract (``q_proj``, ``wkv_a``, ``q_norm`` …) gets weights from a generator
seeded by (seed, config, role), so the attempt and the reference see the same numbers whatever
the attempt calls its layers. The attempt's layers are matched to roles by name first; the rest
by shape, trying every assignment among same-shaped layers (ordered by how much the names look
alike), and the caller keeps the first assignment whose output matches the reference.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from dataclasses import dataclass, field

import torch

from attnprep.grader.result import MappingNote, Message, msg

MAX_CANDIDATES = 720  # 6! same-shaped layers; beyond that only the name-ordered guess is tried


@dataclass(frozen=True)
class Layer:
    """A module of the attempt that owns parameters directly: ``weight`` and maybe ``bias``."""

    name: str
    weight: tuple[int, ...]  # as the role sees it: (out, in)
    bias: tuple[int, ...] | None
    transposed: bool = False  # stores (in, out) and computes x @ W (GPT-2's Conv1D): loaded transposed


@dataclass(frozen=True)
class Role:
    name: str
    kind: str  # "linear" or "rmsnorm"
    weight: tuple[int, ...]
    bias: tuple[int, ...] | None


@dataclass
class Mapping:
    layers: dict[str, str]  # role -> attempt layer name
    by_name: bool
    notes: list[MappingNote] = field(default_factory=list)
    zero_bias: set[str] = field(default_factory=set)  # roles whose attempt layer has no bias
    transposed: set[str] = field(default_factory=set)  # roles whose layer stores (in, out)


def roles_for(exercise, args: dict[str, int]) -> list[Role]:
    roles = []
    for p in exercise.contract.params:
        shapes = p.shapes(args)
        roles.append(Role(p.name, p.type, shapes["weight"], shapes.get("bias")))
    return roles


def role_tensors(roles: list[Role], seed: int, config_index: int, dtype=torch.float32) -> dict[str, dict[str, torch.Tensor]]:
    """Seeded weights per role. Linear: U(-1/sqrt(in), 1/sqrt(in)) like nn.Linear, a non-zero
    bias; RMSNorm: 1 ± 0.5 so that a skipped norm or a forgotten weight shows."""
    out = {}
    for role in roles:
        g = torch.Generator().manual_seed(_mix(seed, config_index, role.name))
        if role.kind == "rmsnorm":
            out[role.name] = {"weight": (1 + (torch.rand(role.weight, generator=g) - 0.5)).to(dtype)}
            continue
        bound = 1 / math.sqrt(role.weight[1])
        tensors = {"weight": ((torch.rand(role.weight, generator=g) * 2 - 1) * bound).to(dtype)}
        if role.bias is not None:
            tensors["bias"] = ((torch.rand(role.bias, generator=g) * 2 - 1) * 0.5).to(dtype)
        out[role.name] = tensors
    return out


def _mix(seed: int, config_index: int, name: str) -> int:
    return zlib.crc32(f"{seed}:{config_index}:{name}".encode()) & 0x7FFFFFFF


def layers_of(module: torch.nn.Module) -> tuple[list[Layer], list[str]]:
    """The attempt's parameter-owning layers, and parameters that do not fit a layer."""
    layers, stray = [], []
    for prefix, sub in module.named_modules():
        params = dict(sub.named_parameters(recurse=False))
        if not params:
            continue
        weight = params.pop("weight", None)
        bias = params.pop("bias", None)
        if weight is not None:
            bias_shape = tuple(bias.shape) if bias is not None else None
            layers.append(Layer(prefix, tuple(weight.shape), bias_shape))
            if weight.dim() == 2 and not isinstance(sub, torch.nn.Linear):  # maybe (in, out), used as x @ W
                layers.append(Layer(prefix, tuple(reversed(weight.shape)), bias_shape, transposed=True))
        elif bias is not None:
            params["bias"] = bias
        # bare matrices (self.W_q = nn.Parameter(...) used with F.linear or x @ W), each with the
        # vector named like it as its bias (b_q, q_bias), are layers too
        for n, p in list(params.items()):
            if p.dim() != 2:
                continue
            b = params.get(_bias_name(n, params))
            out, inp = p.shape
            name = f"{prefix}.{n}".lstrip(".")
            layers.append(Layer(name, (out, inp), (out,) if b is not None and b.shape == (out,) else None))
            layers.append(Layer(name, (inp, out), (inp,) if b is not None and b.shape == (inp,) else None, transposed=True))
        stray.extend(f"{prefix}.{n}".lstrip(".") for n in params)  # until a mapping takes them (mapped_params)
    return layers + _stacked(layers), stray


def _stacked(layers: list[Layer]) -> list[Layer]:
    """Per-head layers of an nn.ModuleList (``heads.0.query`` … ``heads.3.query``, each
    Linear(d_model, head_dim)) as one layer ``heads.*.query`` whose rows are theirs, head after head."""
    groups: dict[str, list[tuple[int, Layer]]] = {}
    for layer in layers:
        parts = layer.name.split(".")
        for i, part in enumerate(parts):
            if part.isdigit() and not layer.transposed and len(layer.weight) == 2:
                groups.setdefault(".".join(parts[:i] + ["*"] + parts[i + 1:]), []).append((int(part), layer))
    stacked = []
    for name, members in groups.items():
        members.sort(key=lambda m: m[0])
        first = members[0][1]
        if (len(members) < 2 or [i for i, _ in members] != list(range(len(members)))
                or any((l.weight, l.bias) != (first.weight, first.bias) for _, l in members)):
            continue
        n = len(members)
        stacked.append(Layer(name, (n * first.weight[0], first.weight[1]),
                             (n * first.bias[0],) if first.bias is not None else None))
    return stacked


def mapped_params(module: torch.nn.Module, mapping: Mapping) -> set[str]:
    """The names of the parameters the mapping's layers own."""
    names = set()
    for layer in mapping.layers.values():
        for name in stack_members(module, layer) or [layer]:
            _, _, w_name, b_name = parameters_of(module, name)
            names |= {w_name, b_name}
    return names


def stack_members(module: torch.nn.Module, layer: str) -> list[str]:
    """The layers a stacked layer (``heads.*.query``) is made of, in order; [] for another layer."""
    if "*" not in layer.split("."):
        return []
    names = []
    for i in itertools.count():
        name = layer.replace("*", str(i), 1)
        try:
            module.get_submodule(name)
        except AttributeError:
            return names
        names.append(name)
    return names


def _bias_name(name: str, params: dict) -> str | None:
    """The 1-D parameter that is the bias of the bare matrix ``name``: W_q -> b_q, wq -> bq,
    q_weight -> q_bias, weight_q -> bias_q."""
    guesses = [name.replace("weight", "bias"), name.replace("Weight", "Bias")]
    for i, c in enumerate(name):
        if c in "wW":
            guesses.append(name[:i] + ("b" if c == "w" else "B") + name[i + 1:])
            guesses.append(name[:i] + "b" + name[i + 1:])
    return next((g for g in guesses if g != name and g in params and params[g].dim() == 1), None)


def parameters_of(module: torch.nn.Module, layer: str) -> tuple[torch.nn.Parameter, torch.nn.Parameter | None, str, str]:
    """A layer's weight and bias (or None) and their parameter names: a submodule's ``weight`` and
    ``bias``, or a bare matrix and the vector named like it."""
    prefix, _, leaf = layer.rpartition(".")
    owner = module.get_submodule(prefix) if prefix else module
    own = dict(owner.named_parameters(recurse=False))
    if leaf in own and own[leaf].dim() == 2 and not isinstance(getattr(owner, leaf, None), torch.nn.Module):
        b = _bias_name(leaf, own)
        join = (prefix + ".") if prefix else ""
        return own[leaf], (own[b] if b else None), layer, (join + b if b else "")
    sub = module.get_submodule(layer)
    bias = getattr(sub, "bias", None)
    join = (layer + ".") if layer else ""
    return sub.weight, bias if isinstance(bias, torch.nn.Parameter) else None, join + "weight", join + "bias"


def layer_named(layers: list[Layer], name: str) -> Layer:
    return next(l for l in layers if l.name == name)


def _oriented(layers: list[Layer]) -> set[str]:
    """Layers that come in both orientations with the same shape (square, not nn.Linear)."""
    seen: dict[tuple[str, tuple], int] = {}
    for l in layers:
        seen[(l.name, l.weight)] = seen.get((l.name, l.weight), 0) + 1
    return {name for (name, _), n in seen.items() if n > 1}


def _key(name: str) -> str:
    """A role-ish key of a layer name: 'self.wq' -> 'q', 'query' -> 'q', 'out_proj' -> 'o'."""
    last = name.split(".")[-1].lower()
    for pattern, key in ((r"qkv", "qkv"), (r"(^|_)(o|out|wo|proj_out|c_proj|output|dense)($|_)", "o"),
                         (r"(^|_|w)q($|_|uery)|query", "q"), (r"(^|_|w)k($|_|ey)|key", "k"),
                         (r"(^|_|w)v($|_|alue)|value", "v"), (r"^wo$|^o", "o")):
        if re.search(pattern, last):
            return key
    return last


def candidates(roles: list[Role], layers: list[Layer]) -> tuple[list[Mapping], Message | None]:
    """Assignments role -> layer to try, best guess first; or ([], why none fits)."""
    either = _oriented(layers)
    fixed: dict[str, Layer] = {}
    for role in roles:
        matching = [l for l in layers if l.name == role.name and l.weight == role.weight]
        if len(matching) == 1 and role.name not in either:
            fixed[role.name] = matching[0]
    if len(fixed) == len(roles):
        return [_finish(roles, fixed, True)], None
    taken = {l.name for l in fixed.values()}
    free_layers = [l for l in layers if l.name not in taken]
    groups: dict[tuple, tuple[list[Role], list[Layer]]] = {}
    for role in roles:
        if role.name in fixed:
            continue
        groups.setdefault(role.weight, ([], []))[0].append(role)
    for layer in free_layers:
        if layer.weight in groups:
            groups[layer.weight][1].append(layer)
    for shape, (rs, ls) in groups.items():
        if len({l.name for l in ls}) < len(rs):
            names = ", ".join(r.name for r in rs)
            return [], msg("contract.no_layer", shape=str(tuple(shape)), names=names, found=len(ls), needed=len(rs))
    per_group = []
    for shape, (rs, ls) in groups.items():
        options = [perm for perm in itertools.permutations(ls, len(rs)) if len({l.name for l in perm}) == len(perm)]
        # names alike first, then the fewer transposed layers (nn.Linear's own orientation)
        options.sort(key=lambda perm: (-sum(_key(l.name) == _key(r.name) for r, l in zip(rs, perm)),
                                       sum(l.transposed for l in perm)))
        per_group.append([{r.name: l for r, l in zip(rs, perm)} for perm in options])
    mappings = []
    for combo in itertools.product(*per_group):
        chosen = dict(fixed)
        for part in combo:
            chosen.update(part)
        if len({l.name for l in chosen.values()}) < len(chosen):
            continue  # one layer cannot play two roles
        mappings.append(_finish(roles, chosen, False))
        if len(mappings) >= MAX_CANDIDATES:
            break
    return mappings, None


def _finish(roles: list[Role], chosen: dict[str, Layer], named: bool) -> Mapping:
    mapping = Mapping(layers={r.name: chosen[r.name].name for r in roles}, by_name=named)
    for role in roles:
        layer = chosen[role.name]
        if role.bias is not None and layer.bias is None:
            mapping.zero_bias.add(role.name)
            mapping.notes.append(MappingNote("zero_bias", role.name, layer.name))
        if layer.transposed:
            mapping.transposed.add(role.name)
            mapping.notes.append(MappingNote("transposed", role.name, layer.name))
    return mapping


@torch.no_grad()
def load(module: torch.nn.Module, mapping: Mapping, weights: dict[str, dict[str, torch.Tensor]]) -> None:
    """Copy the role weights into the attempt's layers; other parameters get seeded values."""
    used = set()
    for role, layer_name in mapping.layers.items():
        members = stack_members(module, layer_name)
        if members:  # per-head layers: each takes its head's rows
            n = len(members)
            for name, w_rows, b_rows in zip(members, weights[role]["weight"].chunk(n), (
                    weights[role]["bias"].chunk(n) if "bias" in weights[role] else [None] * n)):
                w, bias, w_name, b_name = parameters_of(module, name)
                w.copy_(w_rows)
                used.add(w_name)
                if bias is not None and b_rows is not None:
                    bias.copy_(b_rows)
                    used.add(b_name)
            continue
        w, bias, w_name, b_name = parameters_of(module, layer_name)
        weight = weights[role]["weight"]
        w.copy_(weight.t() if role in mapping.transposed else weight)
        used.add(w_name)
        if bias is not None and "bias" in weights[role]:
            bias.copy_(weights[role]["bias"])
            used.add(b_name)
    g = torch.Generator().manual_seed(12345)
    for name, p in module.named_parameters():
        if name not in used:
            p.copy_(torch.rand(p.shape, generator=g).to(p.dtype) - 0.5)

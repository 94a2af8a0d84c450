"""Seeded weights for the contract's roles, and the map from the attempt's layers to those roles.

Every role of the contract (``q_proj``, ``wkv_a``, ``q_norm`` …) gets weights from a generator
seeded by (seed, config, role), so the attempt and the reference see the same numbers whatever
the attempt calls its layers. The attempt's layers are matched to roles by name first; the rest
by shape, trying every assignment among same-shaped layers (ordered by how much the names look
alike), and the caller keeps the first assignment whose output matches the reference.

When no such assignment exists, two more styles are tried: one layer stacking several roles
along its out-features (nanoGPT's ``c_attn``, Perceiver's ``to_kv``, NeoX's per-head interleaved
``query_key_value``), and one role spread over a ``ModuleList`` of per-head layers. Their roles
are recorded as row slices (:attr:`Mapping.rows`): loaded by rows, their gradients graded by rows.

A role the contract repeats (``experts.*.w1`` with ``repeat = "num_experts"``: one per expert) is
one role per index, ``experts.0.w1`` …; they are mapped as one: the pattern to a pattern of the
attempt's layers with one same-shaped layer per index (a ``ModuleList``'s), by name or by shape,
index to index (see :func:`_repeated`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
import re
import zlib
from dataclasses import dataclass, field

import torch
from torch.nn.utils import parametrize

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
    aliases: tuple[str, ...] = ()  # other names of its layer, mapped as its own (``gate_proj`` for ``w1``)
    pattern: str = ""  # a repeated role's name with its index as ``*`` (``experts.*.w1``); "" for a single role

    def named(self, layer: str, leaf: bool = False) -> bool:
        """Whether the attempt's layer ``layer`` goes by this role's name or one of its aliases
        (``leaf``: or is a nested layer whose last name part does, ``mlp.w1``)."""
        names = (self.name, *self.aliases)
        return layer in names or (leaf and _leaf(layer) in names)


@dataclass
class Mapping:
    layers: dict[str, str]  # role -> attempt layer name
    by_name: bool
    notes: list[MappingNote] = field(default_factory=list)
    zero_bias: set[str] = field(default_factory=set)  # roles whose attempt layer has no bias
    transposed: set[str] = field(default_factory=set)  # roles whose layer stores (in, out)
    # roles that share a layer with others or are spread over several: role -> [(layer, its rows
    # that make the role's rows, in order)]; the role's rows are those pieces concatenated
    rows: dict[str, list[tuple[str, tuple[int, ...]]]] = field(default_factory=dict)

    def layer_names(self, role: str) -> list[str]:
        """The attempt layers that hold ``role``'s weights."""
        return [name for name, _ in self.rows[role]] if role in self.rows else [self.layers[role]]


def roles_for(exercise, args: dict[str, int]) -> list[Role]:
    """The contract's roles for the sizes ``args``; a repeated one (``repeat``) once per index."""
    from attnprep.exercises import evaluate

    roles = []
    for p in exercise.contract.params:
        shapes = p.shapes(args)
        aliases = tuple(getattr(p, "aliases", ()))
        if not getattr(p, "repeat", ""):
            roles.append(Role(p.name, p.type, shapes["weight"], shapes.get("bias"), aliases))
            continue
        for i in range(evaluate(p.repeat, args)):
            roles.append(Role(p.name.replace("*", str(i)), p.type, shapes["weight"], shapes.get("bias"),
                              tuple(a.replace("*", str(i)) for a in aliases), pattern=p.name))
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


def load_roles(module: torch.nn.Module, tensors: dict[str, dict[str, torch.Tensor]]) -> torch.nn.Module:
    """``module`` (a reference, whose submodules are named by role) with :func:`role_tensors`'s
    weights copied into each role's ``weight`` and ``bias``."""
    with torch.no_grad():
        for role, pair in tensors.items():
            sub = module.get_submodule(role)
            sub.weight.copy_(pair["weight"])
            if "bias" in pair:
                sub.bias.copy_(pair["bias"])
    return module


def _mix(seed: int, config_index: int, name: str) -> int:
    return zlib.crc32(f"{seed}:{config_index}:{name}".encode()) & 0x7FFFFFFF


def layers_of(module: torch.nn.Module) -> tuple[list[Layer], list[str]]:
    """The attempt's parameter-owning layers, and parameters that do not fit a layer. A bare 2-d
    ``nn.Parameter`` used through ``F.linear`` or ``x @ W`` (``self.wq``, with ``self.bq`` as its
    bias) is a layer of its own, named by the parameter; so is a bare 1-d parameter that is no
    such bias (a norm's gain, ``self.g_q``), also beside a module's own weight."""
    layers, stray = [], []
    index = _index(module)
    outside = {layer: outside_bias(index, layer) for layer in index[0]}
    claimed = {name for name in outside.values() if name is not None}  # biases kept beside their layer
    listed = {name: b for name in index[1] if (b := list_bias(index, name)) is not None}  # in a sibling list
    claimed |= set(listed.values())
    for prefix, sub in module.named_modules():
        params = dict(sub.named_parameters(recurse=False)) | originals(sub)
        params = {n: p for n, p in params.items() if f"{prefix}.{n}".lstrip(".") not in claimed}
        if isinstance(sub, parametrize.ParametrizationList):  # its stored original is its owner's weight
            params = {n: p for n, p in params.items() if not n.startswith("original")}
        if not params:
            continue
        weight = params.pop("weight", None)
        bias = params.pop("bias", None)
        def bare(params: dict, gains: bool) -> None:
            """Bare matrices as layers (with their bias), and with ``gains`` a bare 1-d parameter
            that is no matrix's bias too (a norm's gain: SPEC §1, mapped by shape too)."""
            partners = {bias_partner(n, params) for n, p in params.items() if p.dim() == 2}
            ordered = set(by_order(params).values())
            shared = shared_bias(params)
            for n, p in params.items():
                # a vector that is a matrix's bias by order only (a ParameterList's, or unnamed pairs)
                # may be a norm's gain as well
                if gains and p.dim() == 1 and (n not in partners or n.isdigit() or n in ordered):
                    layers.append(Layer(f"{prefix}.{n}".lstrip("."), tuple(p.shape), None))
                if p.dim() != 2:
                    continue
                b = bias_partner(n, params)
                name = f"{prefix}.{n}".lstrip(".")
                bias_shape = tuple(params[b].shape) if b is not None else None
                if b is None and name in listed:
                    bias_shape = tuple(index[1][listed[name]].shape)
                if n in shared:  # its part of a vector it shares with the matrices beside it
                    bias_shape = (shared[n][2] - shared[n][1],)
                layers.append(Layer(name, tuple(p.shape), bias_shape))
                layers.append(Layer(name, tuple(reversed(p.shape)), bias_shape, transposed=True))
            stray.extend(f"{prefix}.{n}".lstrip(".") for n in params)  # until a role takes them: bare_params

        if weight is None:
            if bias is not None:
                params["bias"] = bias
            bare(params, gains=True)
            continue
        if bias is None and outside[prefix] is not None:
            bias = index[1][outside[prefix]]
        bias_shape = tuple(bias.shape) if bias is not None else None
        layers.append(Layer(prefix, tuple(weight.shape), bias_shape))
        if weight.dim() == 2 and not isinstance(sub, torch.nn.Linear):  # maybe (in, out), used as x @ W
            layers.append(Layer(prefix, tuple(reversed(weight.shape)), bias_shape, transposed=True))
        # matrices beside a layer's own weight (loralib's Linear(nn.Linear) holds lora_A, lora_B), and
        # a norm's gain kept beside the matrix whose output it normalises (a low-rank down-projection)
        bare(params, gains=True)
    return layers, stray


_STEM = re.compile(r"_?(proj|projection|linear|layer|fc|dense|heads|shards)$")


def outside_bias(index: tuple[dict, dict], layer_name: str) -> str | None:
    """The full name of the vector that is the bias of a bias-free layer, kept beside it in the
    module that holds it (BEiT / Swin-v2: ``self.q = nn.Linear(d, d, bias=False)`` with
    ``self.q_bias = nn.Parameter(torch.zeros(d))``, added after the layer): ``<layer>_bias`` or
    ``<layer>_b``, the layer's name also without a ``_proj`` / ``_linear`` … ending (``q_proj`` ->
    ``q_bias``), one side as long as the layer's out-features, and no bare matrix's bias by its
    name. None when there is none (the layer is mapped with a zero bias, SPEC §1)."""
    subs, params = index
    sub = subs.get(layer_name)
    if sub is None or not layer_name or isinstance(getattr(sub, "bias", None), torch.Tensor):
        return None
    weight = originals(sub).get("weight", getattr(sub, "weight", None))
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        return None
    owner, _, leaf = layer_name.rpartition(".")
    if leaf.isdigit() and owner and len(subs[owner]._modules) == 1:
        # the one entry of a list (a list of per-rank or per-head parts built for one part): the
        # bias kept beside the list is named for the list (o_heads -> o_bias)
        owner, _, leaf = owner.rpartition(".")
    own = dict(subs[owner].named_parameters(recurse=False))
    partners = _pairable(own)[1]  # the vectors a bare matrix's name already pairs
    for name in _outside_names(leaf):
        p = own.get(name)
        if name != leaf and p is not None and p.dim() == 1 and p.shape[0] == weight.shape[0] and name not in partners:
            return f"{owner}.{name}".lstrip(".")
    return None


def _outside_names(leaf: str) -> tuple[str, ...]:
    """The names a bias kept beside the bias-free layer ``leaf`` goes by (:func:`outside_bias`)."""
    stem = _STEM.sub("", leaf)
    return tuple(dict.fromkeys((f"{leaf}_bias", f"{leaf}_b", f"{stem}_bias", f"{stem}_b")))


def _head_biases(module: torch.nn.Module) -> list[tuple[str, str]]:
    """The 2-d parameters that are a bias-free layer's bias per head, kept beside it by name as
    ``(H, D)`` (``self.q_proj = nn.Linear(d, d, bias=False)`` with ``self.q_bias =
    nn.Parameter(torch.zeros(H, D))``, added after the head split): as many numbers as the layer's
    out-features; as ``(path, name)`` of the module holding them. :func:`_flatten_matrices` makes
    each the vector :func:`outside_bias` pairs."""
    found = []
    for path, sub in module.named_modules():
        own = sub._parameters
        for leaf, layer in sub.named_children():
            weight = getattr(layer, "weight", None)
            if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or isinstance(getattr(layer, "bias", None), torch.Tensor):
                continue
            for name in _outside_names(leaf):
                p = own.get(name)
                if name != leaf and isinstance(p, torch.nn.Parameter) and p.dim() == 2 and p.numel() == weight.shape[0]:
                    found.append((path, name))
                    break
    return found


def list_bias(index: tuple[dict, dict], layer_name: str) -> str | None:
    """The bias of entry ``i`` of an ``nn.ParameterList`` of matrices kept in a sibling list of
    vectors paired by name (d2l's per-head weights: ``self.wq = ParameterList([(d, d_model)] * H)``
    beside ``self.bq = ParameterList([(d,)] * H)``): its entry ``i``, a vector as long as one side of
    the matrix, as the full name. None when the entry has a partner in its own list, or none by name."""
    subs, params = index
    owner, _, leaf = layer_name.rpartition(".")
    matrix = params.get(layer_name)
    holder = subs.get(owner)
    if not leaf.isdigit() or matrix is None or matrix.dim() != 2 or not isinstance(holder, torch.nn.ParameterList):
        return None
    if bias_partner(leaf, dict(holder.named_parameters(recurse=False))) is not None:
        return None
    parent, _, name = owner.rpartition(".")
    if parent not in subs:
        return None
    entries = {n: m[int(leaf)] for n, m in subs[parent].named_children()
               if isinstance(m, torch.nn.ParameterList) and len(m) == len(holder) and isinstance(m[int(leaf)], torch.Tensor)}
    partner = _named_partner(name, {**entries, name: matrix})
    if partner is None or entries[partner].dim() != 1 or entries[partner].shape[0] not in matrix.shape:
        return None
    return f"{parent}.{partner}.{leaf}".lstrip(".")


def settle(module: torch.nn.Module, shapes: frozenset = frozenset(), counts: frozenset = frozenset(),
           twice: frozenset = frozenset(), heads: frozenset = frozenset()) -> None:
    """Make each weight that ``module`` computes from several stored tensors a plain parameter
    holding what it computes now: weight normalisation, ``w = g · v / ‖v‖`` (``torch.nn.utils.
    parametrizations.weight_norm``, whose ``original0`` / ``original1`` are g and v, and the older
    ``torch.nn.utils.weight_norm`` hook with ``weight_g`` / ``weight_v``; the older
    ``torch.nn.utils.spectral_norm`` hook's ``weight_orig / σ`` likewise, and ``torch.nn.utils.prune``'s
    ``weight_orig · weight_mask``, its mask a buffer). The layer's forward is a
    function of ``w`` alone, so the grader's weight goes into ``w`` (as the parametrization's own
    ``right_inverse`` would put it) and the gradient graded is that of ``w``. So is a
    parametrization of one stored tensor that computes from that tensor alone (spectral_norm's
    ``w / σ``, a ``Transpose`` of an ``(in, out)`` original): the layer's weight is what it computes.
    One that reads other parameters as well (minLoRA's update on ``base.weight``, ``+ B·A``) stays:
    the grader's weight is its original, the parametrization on top (:func:`originals`).
    ``shapes``: the contract's weight shapes ``(out, in)``, which say how a matrix kept in three dims
    reads (:func:`_matrix_shape`); ``counts``: how many times a repeated role repeats (the number of
    experts), which says when a stack of matrices is one matrix per index (:func:`_per_index`);
    ``twice``: the contract shapes that at least two roles have, which a stack of matrices may hold;
    ``heads``: the config's head counts, which say how a 3-d kernel two readings fit groups its dims."""
    from torch.nn.utils import prune
    from torch.nn.utils.spectral_norm import SpectralNorm, remove_spectral_norm
    from torch.nn.utils.weight_norm import WeightNorm, remove_weight_norm

    for sub in list(module.modules()):
        hooks = [h for h in sub._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
        for hook in hooks:  # torch.nn.utils.prune: weight_orig · weight_mask (a buffer), made one weight
            prune.remove(sub, hook._tensor_name)
        hooks = [h for h in sub._forward_pre_hooks.values() if isinstance(h, WeightNorm)]
        for hook in hooks:
            remove_weight_norm(sub, hook.name)
        hooks = [h for h in sub._forward_pre_hooks.values() if isinstance(h, SpectralNorm)]
        for hook in hooks:  # the older spectral_norm hook: weight_orig / σ from weight_u, weight_v
            remove_spectral_norm(sub, hook.name)
        if parametrize.is_parametrized(sub):
            for name, stored in list(sub.parametrizations.items()):
                original = getattr(stored, "original", None)
                if not isinstance(original, torch.nn.Parameter) or not _reads_others(module, sub, name, original):
                    parametrize.remove_parametrizations(sub, name, leave_parametrized=True)
    _flatten_matrices(module, shapes, counts, twice, heads)


def upcast(module: torch.nn.Module) -> None:
    """Hold in float32 each parameter the attempt stores in a lower precision (``nn.Linear(...,
    dtype=torch.bfloat16)``, an inference habit, its forward casting the weight to the input's dtype).
    The grader grades in float32: the weights it loads there keep every digit the reference is given,
    where a bfloat16 parameter would round them (every output off by that rounding)."""
    for p in module.parameters():
        if p.dtype in (torch.bfloat16, torch.float16):
            p.data = p.data.float()


def _reads_others(module: torch.nn.Module, sub: torch.nn.Module, name: str, original: torch.nn.Parameter) -> bool:
    """Does ``sub``'s parametrized tensor ``name`` read a parameter of ``module`` other than its
    ``original`` (minLoRA's ``W + B·A`` reads lora_A and lora_B)? Found by what autograd records:
    the leaves its graph reaches, every parameter made to require a gradient for the look and put
    back as it was. A parametrization that raises here is left as it is (read as reading others)."""
    params = [p for p in module.parameters() if p is not original]
    if not params:
        return False
    frozen = [p for p in params if not p.requires_grad]
    try:
        for p in frozen:
            p.requires_grad_(True)
        with torch.enable_grad():
            value = getattr(sub, name)
    except Exception:  # noqa: BLE001 — the attempt's own code: left to its own grade
        return True
    finally:
        for p in frozen:
            p.requires_grad_(False)
    wanted = {id(p) for p in params}
    seen, todo = set(), [value.grad_fn] if isinstance(value, torch.Tensor) and value.grad_fn is not None else []
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if id(getattr(node, "variable", None)) in wanted:
            return True
        todo.extend(n for n, _ in node.next_functions)
    return False


def _contract(shape: tuple[int, ...], shapes: frozenset) -> bool:
    """``shape`` is a contract weight's ``(out, in)`` (``shapes``), or its transpose ``(in, out)``."""
    return shape in shapes or shape[::-1] in shapes


def _matrix_shape(name: str, p: torch.Tensor, shapes: frozenset = frozenset(), twice: frozenset = frozenset(),
                  heads: frozenset = frozenset()) -> tuple[tuple[int, ...], tuple[int, ...] | None] | None:
    """The matrix a parameter of more than two dims is, and the permutation of its dims read before
    flattening (None: none). A kernel-1 convolution's ``(out, in, 1)`` weight is ``(out, in)``. A
    3-d parameter is read as the matrix of a contract weight's shape (``shapes``, ``(out, in)``, in
    either orientation) where one reading gives one: a Flax ``DenseGeneral`` kernel ``(d_model, H, D)``
    is ``(d_model, H·D)``, an ``(in, out)`` matrix; Gemma's JAX ``(H, d_model, D)`` is ``(H·D, d_model)``
    with its last two dims swapped; an ``(H, D, d_model)`` output kernel is ``(H·D, d_model)``.
    Otherwise a stack of k same-shaped matrices ``(k, out, in)`` is the ``(k·out, in)`` rows of a
    fused layer, and ``(k, in, out)`` (with ``(out, in)`` a shape of two roles, ``twice``, and ``(in,
    out)`` none) the same rows read with its last two dims swapped. Where two readings fit, the one
    that merges a head count (``heads``) with the dim after it. A vector kept broadcast-ready (a
    norm's gain as ``(1, 1, dim)``, or ``(1, dim)`` where that is no contract matrix) is the ``(dim,)``
    vector. A 4-d kernel is read where one reading gives a
    contract matrix: Gemma's JAX ``qkv_einsum`` ``(3, H, d_model, D)`` is ``(3·H·D, d_model)``, its
    last two dims swapped (a ``(3, H, D)`` bias paired by name is its vector), Praxis' combined qkv
    ``(3, d_model, H, D)`` the same with d_model moved last; else, when its third dim
    is a contract matrix's in-features, it is the rows of a fused layer the same way (Gemma's
    ``kv_einsum`` ``(2, KV, d_model, D)`` is ``(2·KV·D, d_model)``, k's rows then v's), or when its first
    dim is (a Flax ``(d_context, 2, H, D)`` kernel is the ``(in, out)`` matrix ``(d_context, 2·H·D)``).
    None for anything else (a ParameterList entry, five or more dims, a 4-d one no reading makes a
    contract matrix)."""
    vector = tuple(n for n in p.shape if n != 1)
    if len(vector) == 1 and (p.dim() >= 3 or (p.dim() == 2 and not _contract(tuple(p.shape), shapes))):
        return vector, None
    if p.dim() >= 3 and all(d == 1 for d in p.shape[2:]):
        return (p.shape[0], p.shape[1]), None
    if p.dim() == 4 and not name.isdigit():  # Gemma's JAX qkv kernel (3, H, d_model, D): (3·H·D, d_model)
        a, b, c, d = p.shape
        for flat, perm in (((a * b * c, d), None), ((a * b * d, c), (0, 1, 3, 2)), ((a, b * c * d), None),
                           ((a * c * d, b), (0, 2, 3, 1))):  # Praxis' combined qkv (3, d_model, H, D)
            if _contract(flat, shapes):
                return flat, perm
        # a stack of k kernels (k, heads, in, D) whose in-features a contract matrix has (Gemma's
        # kv_einsum (2, KV, d_model, D)): the rows of a fused layer, (k·heads·D, in); a Flax kernel
        # (in, k, heads, D) (DenseGeneral(features=(2, H, D)) over the context): (in, k·heads·D)
        ins = {shape[1] for shape in shapes if len(shape) == 2}
        if c in ins:
            return (a * b * d, c), (0, 1, 3, 2)
        if a in ins:
            return (a, b * c * d), None
        return None
    if p.dim() != 3 or name.isdigit():
        return None
    a, b, c = p.shape
    readings = [((a * b, c), None), ((a, b * c), None), ((a * c, b), (0, 2, 1)), ((b, a * c), (1, 0, 2))]
    fits = [(flat, perm) for flat, perm in readings if _contract(flat, shapes)]
    # where two readings fit (MaxText's wq_b (q_lora_rank, H, nope + rope) with q_lora_rank = nope +
    # rope reads as (q_lora_rank·H, nope + rope) too), the one that groups a head count with the dim
    # after it (H·D) is the kernel's: the first of the two dims each reading merges
    grouped = [a, b, a, a]
    by_heads = [fit for fit, first in zip(readings, grouped) if fit in fits and first in heads]
    if fits:
        return (by_heads or fits)[0]
    if (b, c) not in twice and (c, b) in twice:  # a stack of (in, out) matrices (Gemma's gating_einsum
        return readings[2]  # (2, d_model, d_ff), gate and up): the (out, in) rows of a fused layer
    return readings[0]


def _per_index(p: torch.Tensor, path: str, shapes: frozenset, counts: frozenset) -> int | None:
    """How many matrices the 3-d parameter ``p`` holds when it is one matrix per index of a repeated
    role, stacked on its first dim (Hugging Face transformers v5's experts: ``gate_up_proj = (E, 2 *
    d_ff, d_model)``, ``down_proj = (E, d_model, d_ff)``, read as ``self.gate_up_proj[e]``): its first
    dim is a repeat count, and no reading of it as one matrix gives a contract shape (a Flax kernel's
    does); else None. A stack in a module that is already one of an index (``path`` ``experts.0``: its
    gate and up as ``w13``) is none. A 2-d parameter is such a stack along its rows (:func:`_row_stack`)."""
    if any(part.isdigit() for part in path.split(".")):
        return None
    if p.dim() == 2:
        return _row_stack(p, shapes, counts)
    if p.dim() != 3 or p.shape[0] not in counts:
        return None
    read = _matrix_shape("", p, shapes)
    return p.shape[0] if read is None or not _contract(read[0], shapes) else None


def _row_stack(p: torch.Tensor, shapes: frozenset, counts: frozenset) -> int | None:
    """The repeat count k when the 2-d parameter ``p`` holds k matrices one under the other, ``(k·r,
    c)`` with ``(r, c)`` a contract shape in either orientation and ``(k·r, c)`` none (DBRX's experts:
    ``w1 = (num_experts · d_ff, d_model)``, read as ``self.w1.view(E, d_ff, d_model)[e]``); else None."""
    n, c = p.shape
    if _contract((n, c), shapes):
        return None
    for k in sorted(counts):
        if k > 1 and n % k == 0 and _contract((n // k, c), shapes):
            return k
    return None


def _flatten_matrices(module: torch.nn.Module, shapes: frozenset = frozenset(), counts: frozenset = frozenset(),
                      twice: frozenset = frozenset(), heads: frozenset = frozenset()) -> None:
    """Register each matrix kept in more than two dims (:func:`_matrix_shape`: ``nn.Conv1d(d, d, 1)``
    as a projection, ``W_qkv = nn.Parameter(torch.randn(3, d, d))`` and its ``(3, d)`` bias by name, a
    Flax kernel ``(d_model, H, D)`` and its ``(H, D)`` bias) as the 2-d parameter it is, so that it
    maps, loads and grades as a layer. While the attempt's module runs, each of its parts reads it in
    its own shape: a view of the 2-d parameter (its dims permuted back where the reading permuted them)
    made by a forward pre-hook of the module and dropped when the call ends (a view kept on the module
    would go stale on ``module.to(dtype)`` and cannot be deep-copied)."""
    flattened, stacks = [], []
    for path, sub in list(module.named_modules()):
        own = dict(sub._parameters.items())
        # the kernels of more dims first: a 4-d kernel's 3-d bias is its vector, not a stack
        for name, p in sorted(own.items(), key=lambda item: -item[1].dim() if item[1] is not None else 0):
            if sub._parameters.get(name) is not p:
                continue  # registered again already: a kernel's bias, read with its kernel below
            k = _per_index(p, path, shapes, counts) if isinstance(p, torch.nn.Parameter) else None
            if k is not None and not parametrize.is_parametrized(sub, name) and name not in sub._modules:
                # one matrix per index: a ParameterList under the same name, so that its entries map
                # index by index (experts.gate_up_proj.0 ...); read as their stack while the module runs
                del sub._parameters[name]
                parts = p.unbind(0) if p.dim() == 3 else p.view(k, -1, p.shape[1]).unbind(0)
                sub._modules[name] = torch.nn.ParameterList(
                    [torch.nn.Parameter(m.detach().clone(), requires_grad=p.requires_grad) for m in parts])
                stacks.append((path, name, p.dim()))
                continue
            read = _matrix_shape(name, p, shapes, twice, heads) if isinstance(p, torch.nn.Parameter) else None
            if read is None or parametrize.is_parametrized(sub, name):
                continue
            flat, perm = read
            dims = tuple(p.shape) if perm is None else tuple(p.shape[i] for i in perm)
            # the matrix's side made of two dims (the rows of a stack, a kernel's H·D side): a bias of
            # those two dims, paired by name, is that side's vector
            sides = set()
            if len(dims) == 4 and flat == (dims[0] * dims[1] * dims[2], dims[3]):
                sides.add(dims[:3])
            if len(dims) == 4 and flat == (dims[0], dims[1] * dims[2] * dims[3]):  # Flax's (d_model, 3, H, D)
                sides.add(dims[1:])
            if len(dims) == 3 and dims[2] != 1:
                if flat == (dims[0] * dims[1], dims[2]):
                    sides.add(dims[:2])
                if flat == (dims[0], dims[1] * dims[2]):  # (both when a dim is 1: one head)
                    sides.add(dims[1:])
            if sides:
                vectors = {n: q for n, q in own.items() if q is not None and q.dim() == 1}
                vectors.update({n: q.flatten() for n, q in own.items() if q is not None and tuple(q.shape) in sides})
                b = _named_partner(name, {**vectors, name: p})
                if b is not None and own[b].dim() in (2, 3) and sub._parameters[b] is own[b]:
                    flattened.append((path, b, _flat_param(sub, b, (own[b].numel(),)), None))
            flattened.append((path, name, _flat_param(sub, name, flat, perm), perm))
    if isinstance(module, torch.jit.ScriptModule):
        return
    for path, name in _head_biases(module):
        sub = module.get_submodule(path)
        flattened.append((path, name, _flat_param(sub, name, (sub._parameters[name].numel(),)), None))
    merged = _merge_input_parts(module, shapes, heads)
    if not flattened and not stacks and not merged:
        return

    # by their paths from the module called (a deep copy of it, the dtype cases', runs its own)
    def views(mod, args):
        for path, name, shape, perm in flattened:
            sub = mod.get_submodule(path)
            view = sub._parameters[name].view(shape)
            sub.__dict__[name] = view if perm is None else view.permute(_inverse(perm))
        for path, name, dims in stacks:  # a 2-d one: its matrices one under the other again
            sub = mod.get_submodule(path)
            sub.__dict__[name] = (torch.stack if dims == 3 else torch.cat)(list(sub._modules[name]))
        for holder, parts, width in merged:  # each part its block of the merged matrix's columns
            whole = mod.get_submodule(holder)._parameters["weight"]
            for i, part in enumerate(parts):
                mod.get_submodule(part).__dict__["weight"] = whole[:, i * width:(i + 1) * width]

    def drop(mod, args, out):
        for path, name in [(p, n) for p, n, _, _ in flattened] + [(p, n) for p, n, _ in stacks]:
            mod.get_submodule(path).__dict__.pop(name, None)
        for _, parts, _ in merged:
            for part in parts:
                mod.get_submodule(part).__dict__.pop("weight", None)

    module.register_forward_pre_hook(views)
    module.register_forward_hook(drop, always_call=True)
    _around_own_call(module, views, drop)


def _merge_input_parts(module: torch.nn.Module, shapes: frozenset, heads: frozenset) -> list[tuple[str, list[str], int]]:
    """Register as one matrix the bias-free layers of one list whose outputs the attempt sums, each
    over its own block of the input features: Megatron's row-parallel linear simulated on one device
    (``o_proj.shards[r]: Linear(d / tp, d)``, the ranks' partial outputs summed), or an output
    projection per head (``o_heads[h]: Linear(head_dim, d)``). Such a list is the matrix ``(out,
    k·in)``, its entries its blocks of columns in list order, where that is a contract shape and
    neither the entries' shape nor (k a head count) their rows one under the other is (a list of
    per-head rows is :func:`_split`'s). The matrix is registered as ``weight`` on the list, or on
    the module holding the list when the list is its only child and it has a ``bias`` of that size
    and no weight (a RowParallelLinear with its one bias); each entry reads its block as a view
    while the module runs. Returns ``(holder, entries, block width)``."""
    groups: dict[tuple, list[tuple[str, torch.nn.Module]]] = {}
    for path, sub in module.named_modules():
        if isinstance(sub, torch.jit.ScriptModule):  # its parameters are TorchScript's (no dict to re-register in)
            continue
        own = sub._parameters
        weight = own.get("weight")
        if not path or not isinstance(weight, torch.nn.Parameter) or weight.dim() != 2 or own.get("bias") is not None:
            continue
        if set(own) - {"weight", "bias"} or sub._modules or parametrize.is_parametrized(sub):
            continue
        holder, _, last = path.rpartition(".")
        if not holder or not last.isdigit():
            continue  # the entries of one list
        groups.setdefault((holder, tuple(weight.shape)), []).append((path, sub))
    merged = []
    for (holder, (out, width)), entries in groups.items():
        k = len(entries)
        parent, _, leaf = holder.rpartition(".")
        container = module.get_submodule(holder)
        if len(container._modules) != k or (out, k * width) not in shapes:
            continue  # the list holds more than these layers, or they make no contract matrix
        owner = module.get_submodule(parent)
        bias = owner._parameters.get("bias")
        lifted = (parent and set(owner._modules) == {leaf} and "weight" not in owner._parameters
                  and isinstance(bias, torch.Tensor) and tuple(bias.shape) == (out,))
        if lifted:
            container, holder = owner, parent  # a RowParallelLinear: its shards (one, at tp = 1) and its one bias
        elif k < 2 or (out, width) in shapes or ((k * out, width) in shapes and any(h % k == 0 for h in heads)):
            continue
        if "weight" in container._parameters or hasattr(type(container), "weight"):
            continue
        entries.sort(key=lambda e: int(e[0].rpartition(".")[2]))
        first = entries[0][1]._parameters["weight"]
        whole = torch.cat([sub._parameters["weight"].detach() for _, sub in entries], dim=1)
        container._parameters["weight"] = torch.nn.Parameter(whole.clone(), requires_grad=first.requires_grad)
        for _, sub in entries:
            del sub._parameters["weight"]
        merged.append((holder, [path for path, _ in entries], width))
    return merged


def _around_own_call(module: torch.nn.Module, before, after) -> None:
    """A module whose class overrides ``__call__`` (MLX's habit, which has no ``forward``; JAX's) never
    runs ``nn.Module``'s hooks, so the views :func:`_flatten_matrices` makes for the call would never
    be made: its class becomes a subclass of the same name whose ``__call__`` runs ``before``, the
    attempt's own ``__call__``, then ``after``."""
    cls = type(module)
    own = cls.__call__
    if own is torch.nn.Module.__call__:
        return

    def __call__(self, *args, **kwargs):
        before(self, args)
        try:
            return own(self, *args, **kwargs)
        finally:
            after(self, args, None)

    module.__class__ = type(cls.__name__, (cls,), {"__call__": __call__, "__module__": cls.__module__,
                                                   "__qualname__": cls.__qualname__})


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``perm``: (0, 2, 3, 1) -> (0, 3, 1, 2); an involution is its own."""
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def _flat_param(sub: torch.nn.Module, name: str, flat: tuple[int, ...], perm: tuple[int, ...] | None = None
                ) -> tuple[int, ...]:
    """Register ``sub``'s parameter ``name`` in the 2-d (or 1-d) shape ``flat``, its dims permuted by
    ``perm`` first; the shape a view of the new parameter takes before it is permuted back."""
    p = sub._parameters[name]
    permuted = p.detach() if perm is None else p.detach().permute(perm)
    sub._parameters[name] = torch.nn.Parameter(permuted.reshape(flat).clone(), requires_grad=p.requires_grad)
    return tuple(permuted.shape)


def originals(sub: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """The stored parameter of each tensor of ``sub`` computed by a parametrization
    (``torch.nn.utils.parametrize``: minLoRA's update registered on ``base.weight``, weight_norm):
    ``{"weight": sub.parametrizations.weight.original}``. The layer is ``sub`` all the same, with
    that parameter as its weight: the grader's weights go into it, the parametrization on top."""
    if not parametrize.is_parametrized(sub):
        return {}
    return {name: stored.original for name, stored in sub.parametrizations.items()
            if isinstance(getattr(stored, "original", None), torch.nn.Parameter)}


def bare_params(module: torch.nn.Module, mapping: Mapping) -> set[str]:
    """The bare parameters that ``mapping`` gives a role: each bare weight and its bias."""
    subs, params = dict(module.named_modules()), dict(module.named_parameters())
    return {name for role in mapping.layers for layer in mapping.layer_names(role)
            if layer in params and layer not in subs for name in params_of(module, layer, (subs, params))[2]}


def bias_partner(weight: str, params) -> str | None:
    """The 1-d parameter that is the bias of a bare weight parameter: wq -> bq, W_q -> b_q,
    q_weight -> q_bias, weight_q -> bias_q, qkv -> qkv_bias; in an ``nn.ParameterList`` (entries
    named by their index) the vector right after the matrix, as long as one of its sides. None when
    there is none."""
    if weight.isdigit():
        after, matrix = params.get(str(int(weight) + 1)), params.get(weight)
        if after is not None and after.dim() == 1 and matrix is not None and after.shape[0] in matrix.shape:
            return str(int(weight) + 1)
        return None
    return _named_partner(weight, params) or by_order(params).get(weight) or shared_bias(params).get(weight, (None,))[0]


def _named_partner(weight: str, params) -> str | None:
    options = [weight.replace("weight", "bias"), weight.replace("Weight", "Bias"), weight.replace("kernel", "bias"),
               f"{weight}_bias", f"{weight}_b"]
    for i, c in enumerate(weight):  # wq -> bq, W_q -> b_q or B_q, q_w -> q_b
        if c in "wW":
            options += [weight[:i] + "b" + weight[i + 1:], weight[:i] + "B" + weight[i + 1:]]
    return next((o for o in options if o != weight and o in params and params[o].dim() == 1), None)


# {(pairing, the parameters' names and shapes): what it found}: the pairings read nothing else of the
# parameters, and loading a mapping asks them again for every layer of a module (each an O(n) walk
# of its parameters; a module of per-head matrices asked them thousands of times a child)
_PAIRINGS: dict[tuple, dict] = {}


def _paired(pairing, work, params) -> dict:
    key = (pairing, tuple((n, tuple(p.shape)) for n, p in params.items()))
    found = _PAIRINGS.get(key)
    if found is None:
        if len(_PAIRINGS) >= 4096:
            _PAIRINGS.clear()
        found = _PAIRINGS[key] = work(params)
    return found


def _pairable(params) -> tuple[list[str], set]:
    """The names a bias could be paired by (neither a module's own weight / bias nor a
    ParameterList's index), and the vectors a name already pairs with a matrix."""
    names = [n for n in params if n not in ("weight", "bias") and not n.isdigit()]
    return names, {_named_partner(n, params) for n in names if params[n].dim() == 2}


def shared_bias(params) -> dict[str, tuple[str, int, int]]:
    """One vector holding the biases of several matrices made right before it, in their order:
    nn.MultiheadAttention's own layout when kdim != embed_dim (q_proj_weight, k_proj_weight,
    v_proj_weight, then in_proj_bias). {matrix: (vector, start, end)} for a vector that no name or
    order pairs, as long as the first sides of a run (two or more) of unpaired matrices summed.
    Shared: read it, do not change it."""
    return _paired(shared_bias, _shared_bias, params)


def _shared_bias(params) -> dict[str, tuple[str, int, int]]:
    if by_order(params):
        return {}
    names, named = _pairable(params)
    found: dict[str, tuple[str, int, int]] = {}
    run: list[str] = []
    for n in names:
        p = params[n]
        if p.dim() == 2:
            run = run + [n] if _named_partner(n, params) is None else []
        elif p.dim() == 1 and n not in named:
            spans = [(i, j) for i in range(len(run)) for j in range(i + 2, len(run) + 1)
                     if sum(params[m].shape[0] for m in run[i:j]) == p.shape[0]]
            if spans:
                i, j = spans[0]
                start = 0
                for m in run[i:j]:
                    found[m] = (n, start, start + params[m].shape[0])
                    start += params[m].shape[0]
            run = []
    return found


def bias_rows(module: torch.nn.Module, layer_name: str) -> tuple[str, tuple[int, ...]] | None:
    """For a bare matrix whose bias is a slice of a vector it shares (:func:`shared_bias`): the
    vector's name and the slice's rows; else None."""
    subs = dict(module.named_modules())
    owner, _, leaf = layer_name.rpartition(".")
    if owner not in subs:
        return None
    shared = shared_bias(dict(subs[owner].named_parameters(recurse=False)))
    if leaf not in shared:
        return None
    vector, start, end = shared[leaf]
    return f"{owner}.{vector}".lstrip("."), tuple(range(start, end))


def by_order(params) -> dict[str, str]:
    """Matrices and vectors that no name pairs (``self.A`` … ``self.a`` …, or ``W_in`` / ``shift``),
    paired by the order they were made in when they are as many and each vector is as long as a
    side of its matrix: {matrix: vector}. Such a vector may be a norm's gain just as well (kept as
    a 1-d layer too, see :func:`layers_of`). Shared: read it, do not change it."""
    return _paired(by_order, _by_order, params)


def _by_order(params) -> dict[str, str]:
    names, named = _pairable(params)
    matrices = [n for n in names if params[n].dim() == 2 and _named_partner(n, params) is None]
    vectors = [n for n in names if params[n].dim() == 1 and n not in named]
    if not matrices or len(matrices) != len(vectors):
        return {}
    if not all(params[v].shape[0] in params[m].shape for m, v in zip(matrices, vectors)):
        return {}
    return dict(zip(matrices, vectors))


def layer_named(layers: list[Layer], name: str) -> Layer:
    return next(l for l in layers if l.name == name)


def _oriented(layers: list[Layer]) -> set[str]:
    """Layers that come in both orientations with the same shape (square, not nn.Linear)."""
    seen: dict[tuple[str, tuple], int] = {}
    for l in layers:
        seen[(l.name, l.weight)] = seen.get((l.name, l.weight), 0) + 1
    return {name for (name, _), n in seen.items() if n > 1}


def _named_part(name: str) -> str:
    """The part of a layer's dotted name that names it: its last, or the module's before a bare
    kernel's generic name (a Flax port's 'key_value.kernel' -> 'key_value')."""
    parts = name.split(".")
    return parts[-2] if len(parts) > 1 and parts[-1].lower() in _GENERIC else parts[-1]


_GENERIC = frozenset({"kernel"})


def _key(name: str) -> str:
    """A role-ish key of a layer name: 'self.wq' -> 'q', 'query' -> 'q', 'out_proj' -> 'o'."""
    last = _named_part(name).lower()
    for pattern, key in ((r"qkv", "qkv"), (r"(^|_)(o|out|wo|proj_out|c_proj|output|dense)($|_)", "o"),
                         (r"(^|_|w)q($|_|uery)|query", "q"), (r"(^|_|w)k($|_|ey)|key", "k"),
                         (r"(^|_|w)v($|_|alue)|value", "v"), (r"^wo$|^o", "o")):
        if re.search(pattern, last):
            return key
    return last


def _leaf(name: str) -> str:
    """The last part of a layer's dotted name: 'mlp.gate_proj' -> 'gate_proj'."""
    return name.rsplit(".", 1)[-1]


def candidates(roles: list[Role], layers: list[Layer], heads: tuple[int, ...] = (),
               leaf_names: bool = False) -> tuple[list[Mapping], Message | None]:
    """Assignments role -> layer to try, best guess first; or ([], why none fits). When no plain
    assignment exists, layers that stack several roles or one role spread over per-head layers
    (see :func:`_fused`; ``heads``: the exercise's head counts) are tried. ``leaf_names``: a nested
    layer (``mlp.w1``) is taken by name when it alone has the role's name as its last part."""
    if any(r.pattern for r in roles):
        return _repeated(roles, layers, heads, leaf_names)
    plain, why = _plain(roles, layers, leaf_names)
    if plain or why is None:
        return plain, why
    fused = _fused(roles, layers, tuple(sorted(set(h for h in heads if h > 1))), leaf_names)
    return (fused, None) if fused else ([], why)


def _repeated(roles: list[Role], layers: list[Layer], heads: tuple[int, ...], leaf_names: bool) -> tuple[list[Mapping], Message | None]:
    """Candidates when some roles repeat by index: each repeated role stands for all its indices
    (``experts.*.w1``), each group of the attempt's layers with one index and one per index
    0..n-1 stands for all its members (``experts.*.fc1``, its ``ModuleList``); those are mapped as
    single roles and layers are, then expanded index by index. A repeated role takes only a
    group of as many layers, a single role never a group."""
    counts = Counter(r.pattern for r in roles if r.pattern)
    one: dict[str, Role] = {}
    for r in roles:
        if r.pattern and r.pattern not in one:
            one[r.pattern] = Role(r.pattern, r.kind, r.weight, r.bias, tuple(_index_pattern(a)[0] for a in r.aliases))
    groups: dict[tuple, dict[int, Layer]] = {}
    for layer in layers:
        pattern, index = _index_pattern(layer.name)
        if len(index) == 1:
            groups.setdefault((pattern, layer.weight, layer.bias, layer.transposed), {})[index[0]] = layer
    members: dict[str, int] = {}
    grouped, stand_ins = set(), []
    for (pattern, weight, bias, transposed), by_index in groups.items():
        if sorted(by_index) == list(range(len(by_index))) and len(by_index) in counts.values():
            stand_ins.append(Layer(pattern, weight, bias, transposed))
            members[pattern] = len(by_index)
            grouped.update(l.name for l in by_index.values())
    single = [r for r in roles if not r.pattern]
    mappings, why = candidates(single + list(one.values()), [l for l in layers if l.name not in grouped] + stand_ins,
                               heads, leaf_names)
    expanded = [m for m in (_expand(m, counts, members, roles) for m in mappings) if m is not None]
    if mappings and not expanded:
        shown = next(iter(one.values()))
        return [], msg("contract.no_layer", shape=str(tuple(shown.weight)), names=shown.name, found=0, needed=counts[shown.name])
    return expanded, why


def _expand(m: Mapping, counts: Counter, members: dict[str, int], roles: list[Role]) -> Mapping | None:
    """A mapping of repeated roles and groups of layers, index by index; None when a repeated role
    got a layer that is not a group of as many (or a single role a group)."""
    def indices(role: str, layers: list[str]) -> list[tuple[str, dict[str, str]]] | None:
        if role not in counts:
            return None if any(l in members for l in layers) else [(role, {l: l for l in layers})]
        if any(members.get(l) != counts[role] for l in layers):
            return None
        return [(role.replace("*", str(i)), {l: l.replace("*", str(i)) for l in layers}) for i in range(counts[role])]

    out = Mapping(layers={}, by_name=m.by_name, notes=list(m.notes))
    layers: dict[str, str] = {}
    for role, layer in m.layers.items():
        named = m.layer_names(role)
        each = indices(role, named)
        if each is None:
            return None
        for name, renamed in each:
            layers[name] = layer.replace("*", _index_of(name, role)) if role in counts else layer
            if role in m.rows:
                out.rows[name] = [(renamed[l], rows) for l, rows in m.rows[role]]
            if role in m.zero_bias:
                out.zero_bias.add(name)
            if role in m.transposed:
                out.transposed.add(name)
    out.layers = {r.name: layers[r.name] for r in roles}
    return out


def _index_of(name: str, pattern: str) -> str:
    """The index a repeated role's name holds where its pattern has ``*``."""
    return next((a for a, b in zip(name.split("."), pattern.split(".")) if b == "*"), "")


def _plain(roles: list[Role], layers: list[Layer], leaf_names: bool = False) -> tuple[list[Mapping], Message | None]:
    either = _oriented(layers)
    fixed: dict[str, Layer] = {}
    for role in roles:
        matching = [l for l in layers if role.named(l.name) and l.weight == role.weight] or \
            [l for l in layers if leaf_names and role.named(l.name, leaf=True) and l.weight == role.weight]
        if len(matching) == 1 and matching[0].name not in either:
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
        options.sort(key=lambda perm: (-sum(_key(l.name) == _key(r.name) or _leaf(l.name) in r.aliases for r, l in zip(rs, perm)),
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


MAX_FUSED = 48  # candidates with stacked or split layers, best guess first
MAX_FUSED_VISITS = 4000  # combinations of such pieces looked at


@dataclass(frozen=True)
class _Piece:
    """Roles held by one layer stacked along its rows, or one role spread over per-head layers."""

    kind: str  # "stacked", "stacked_heads", "stacked_rows", "split" or "parted": the MappingNote kind
    roles: tuple[str, ...]
    layers: tuple[Layer, ...]
    rows: dict  # role -> [(layer name, row indices)]
    shown: str  # the layer name the report shows for these roles
    score: int  # how much the names agree
    late: bool = False  # a rarer reading, tried only after every combination of the others


def _letters(name: str) -> set[str]:
    """The roles a fused layer's name spells: 'to_kv' -> {k, v}, 'query_key_value' -> {q, k, v}."""
    found = set()
    for token in re.split(r"[_\W\d]+", _named_part(name).lower()):
        token = {"query": "q", "key": "k", "value": "v", "attn": ""}.get(token, token)
        token = token[1:] if token.startswith("w") and len(token) > 1 else token
        if token and set(token) <= set("qkv"):
            found |= set(token)
    return found


def _stacked(roles: list[Role], layers: list[Layer], heads: tuple[int, ...]) -> list[_Piece]:
    """One layer whose out-features are several roles' out-features summed (same in-features):
    its rows are those roles' weights in some order, as blocks, interleaved per head, or (roles of
    one width) interleaved row by row."""
    pieces = []
    for layer in layers:
        if len(layer.weight) != 2:
            continue
        letters = _letters(layer.name)
        fits = [r for r in roles if r.kind == "linear" and r.weight[1] == layer.weight[1]
                and (layer.bias is None or r.bias is not None)]
        for size in range(2, len(fits) + 1):
            for subset in itertools.combinations(fits, size):
                if sum(r.weight[0] for r in subset) != layer.weight[0]:
                    continue
                score = sum(1 if _key(r.name) in letters else -1 for r in subset) if letters else 0
                orders = list(itertools.permutations(subset))
                for order in orders:
                    rows, start = {}, 0
                    for r in order:
                        rows[r.name] = [(layer.name, tuple(range(start, start + r.weight[0])))]
                        start += r.weight[0]
                    pieces.append(_Piece("stacked", tuple(r.name for r in order), (layer,), rows, layer.name, score))
                widths = {r.weight[0] for r in subset}
                # one row of each role in turn (gpt-oss's gate / up: h[..., ::2], h[..., 1::2]) where
                # the roles are of one width: a group per row
                rowwise = widths.pop() if len(widths) == 1 else 0
                for groups in sorted({h for h in heads if h > 1} | ({rowwise} if rowwise > 1 else set())):
                    if any(r.weight[0] % groups for r in subset):
                        continue
                    kind = "stacked_rows" if groups == rowwise and groups not in heads else "stacked_heads"
                    for order in orders:
                        # group g's rows: [role 0's share; role 1's; …], groups one after another. One
                        # group per head for roles of one width ([q_h; k_h; v_h], GPT-NeoX), one per
                        # kv head for GQA (Falcon-40B: a kv group's query heads, then its key, its value)
                        share = [r.weight[0] // groups for r in order]
                        size = sum(share)
                        rows = {r.name: [(layer.name, tuple(g * size + sum(share[:j]) + i for g in range(groups)
                                                            for i in range(share[j])))]
                                for j, r in enumerate(order)}
                        pieces.append(_Piece(kind, tuple(r.name for r in order), (layer,), rows, layer.name, score,
                                             late=kind == "stacked_rows"))
    return pieces


def _index_pattern(name: str) -> tuple[str, tuple[int, ...]]:
    """'heads.2.query' -> ('heads.*.query', (2,)): a layer's place in a ModuleList."""
    parts = name.split(".")
    return ".".join("*" if p.isdigit() else p for p in parts), tuple(int(p) for p in parts if p.isdigit())


_KEYED_ENTRY = re.compile(r"([A-Za-z]+_?)(\d+)")


def _entry_pattern(name: str) -> tuple[str, tuple[int, ...]]:
    """:func:`_index_pattern`, where a module above the layer may also be an entry of an
    ``nn.ModuleDict`` keyed by a word and a number ('heads.head_2.q' -> ('heads.head_*.q', (2,))):
    entries ordered by that number, as they are inserted. The layer's own name is an entry only as a
    bare number (``w1``, ``w3`` are two roles, not two entries), and so is a list's name (``w2.0``)."""
    parts, index = [], []
    above = name.split(".")
    for at, part in enumerate(above):
        # a word and a number above a named module is a dict's entry ("head0.q"); above a list's
        # index it is the list's own name ("w2.0", "fc1.0")
        keyed = _KEYED_ENTRY.fullmatch(part) if at < len(above) - 1 and not above[at + 1].isdigit() else None
        if part.isdigit():
            parts.append("*")
            index.append(int(part))
        elif keyed:
            parts.append(keyed.group(1) + "*")
            index.append(int(keyed.group(2)))
        else:
            parts.append(part)
    return ".".join(parts), tuple(index)


def _split(roles: list[Role], layers: list[Layer], heads: tuple[int, ...]) -> list[_Piece]:
    """One role whose out-features are k same-shaped layers' summed (k a head count or a divisor of
    one): the layers of one ModuleList (or ModuleDict keyed ``head_0``, ``head_1`` …), in its order,
    their outputs concatenated."""
    groups: dict[tuple, list[Layer]] = {}
    for layer in layers:
        pattern, index = _entry_pattern(layer.name)
        if index and len(layer.weight) == 2:
            groups.setdefault((pattern, layer.weight, layer.bias, layer.transposed), []).append(layer)
    pieces = []
    for (pattern, shape, bias, _), members in groups.items():
        # one layer per head, or per group of whole heads (Megatron's column-parallel shards, each
        # rank's heads); with no head count (a feed-forward's rows) any number of parts, but not the
        # parts of a role repeated per index (one expert's shards): those stay unmapped
        k = len(members)
        nested = len(_entry_pattern(members[0].name)[1]) > 1  # a list in each entry of a list (an expert's parts)
        if k not in heads and (nested or k < 2 or (heads and not any(h % k == 0 for h in heads))):
            continue
        members.sort(key=lambda l: _entry_pattern(l.name)[1])
        named = next((p for p in reversed(pattern.split(".")) if p != "*"), pattern)
        for r in roles:
            if r.kind != "linear" or r.weight != (shape[0] * len(members), shape[1]) or (bias is not None and r.bias is None):
                continue
            rows = {r.name: [(l.name, tuple(range(shape[0]))) for l in members]}
            pieces.append(_Piece("split", (r.name,), tuple(members), rows, pattern, int(_key(named) == _key(r.name)),
                                 late=k not in heads))
    return pieces


def _parted(roles: list[Role], layers: list[Layer], heads: tuple[int, ...]) -> list[_Piece]:
    """One role whose rows two layers hold in parts, per head (or per group of a head count): each
    head's rows of the role are its rows of the first layer, then its rows of the second. The paper's
    notation of MLA writes DeepSeek's wkv_b as W_UK (c -> H·nope) and W_UV (c -> H·dv), its wq_b as
    W_UQ and W_QR; after the per-head readings, the two layers' outputs concatenated (the paper's W_DKV
    and W_KR for wkv_a, not per head). The per-head reading comes first: the layout a buggy attempt
    falls back to when none computes the reference or a named mistake. An entry of a list (a per-head
    layer) is no such part: per-head lists are :func:`_split`'s."""
    pieces = []
    two_d = [l for l in layers if len(l.weight) == 2]
    for r in roles:
        if r.kind != "linear":
            continue
        for first, second in itertools.permutations(two_d, 2):
            if first.name == second.name or first.transposed != second.transposed:
                continue
            if first.weight[1] != r.weight[1] or second.weight[1] != r.weight[1]:
                continue
            if first.weight[0] + second.weight[0] != r.weight[0]:
                continue
            if any(l.bias is not None and r.bias is None for l in (first, second)) or (first.bias is None) != (second.bias is None):
                continue
            if any(l.name.rpartition(".")[2].isdigit() for l in (first, second)):
                continue  # an entry of a list is one head's layer: :func:`_split`'s
            for groups in dict.fromkeys((*heads, 1)):  # per head first, then the two blocks one after the other
                if first.weight[0] % groups or second.weight[0] % groups:
                    continue
                a, b = first.weight[0] // groups, second.weight[0] // groups
                rows = {r.name: [piece for g in range(groups) for piece in
                                 ((first.name, tuple(range(g * a, (g + 1) * a))), (second.name, tuple(range(g * b, (g + 1) * b))))]}
                pieces.append(_Piece("parted", (r.name,), (first, second), rows, f"{first.name} + {second.name}", 0))
    return pieces


def _fused(roles: list[Role], layers: list[Layer], heads: tuple[int, ...], leaf_names: bool = False) -> list[Mapping]:
    """Mappings where some layers stack several roles or some roles spread over per-head layers,
    the rest mapped as usual; the names that agree best first, at most MAX_FUSED."""
    found = _stacked(roles, layers, heads) + _split(roles, layers, heads) + _parted(roles, layers, heads)
    # the rarer readings (gate and up one row each in turn, a list of ranks of whole heads) come after
    # every combination of the usual ones, which keep their order and their share of the visits
    early = sorted((p for p in found if not p.late), key=lambda p: -p.score)
    every = early + sorted((p for p in found if p.late), key=lambda p: -p.score)
    named = {r.name: {l.name for l in layers if _key(l.name) == _key(r.name) or _leaf(l.name) in r.aliases} for r in roles}

    def combinations(pieces: list[_Piece], keep) -> list[tuple[int, int, int, tuple[_Piece, ...]]]:
        combos: list[tuple[int, int, int, tuple[_Piece, ...]]] = []
        visits = 0

        def extend(start: int, chosen: tuple[_Piece, ...], used_roles: set, used_layers: set) -> None:
            nonlocal visits
            for i in range(start, len(pieces)):
                p = pieces[i]
                names = {l.name for l in p.layers}
                if used_roles & set(p.roles) or used_layers & names:
                    continue
                visits += 1
                if visits > MAX_FUSED_VISITS:
                    return
                combo = chosen + (p,)
                if keep(combo):
                    combos.append((-sum(c.score for c in combo), -_rest_named(named, combo), len(combos), combo))
                extend(i + 1, combo, used_roles | set(p.roles), used_layers | names)

        extend(0, (), set(), set())
        return sorted(combos, key=lambda c: c[:3])

    combos = combinations(early, lambda combo: True)
    if len(every) > len(early):
        combos += combinations(every, lambda combo: any(p.late for p in combo))
    by_name = {r.name: r for r in roles}
    mappings: list[Mapping] = []
    for *_, combo in combos:
        taken_roles = {r for p in combo for r in p.roles}
        taken_layers = {l.name for p in combo for l in p.layers}
        rest, why = _plain([r for r in roles if r.name not in taken_roles], [l for l in layers if l.name not in taken_layers],
                           leaf_names)
        for plain in rest:
            mappings.append(_combine(roles, by_name, combo, plain))
            if len(mappings) >= MAX_FUSED:
                return mappings
    return mappings


def _rest_named(named: dict[str, set[str]], combo: tuple[_Piece, ...]) -> int:
    """How many of the roles a combination of pieces leaves have a layer it leaves named like them
    (GPT-2's cross-attention: ``c_attn`` stacks k and v, which leaves ``q_attn`` to q; taking q and k
    there leaves ``q_attn`` to no role of its name). Among combinations whose pieces' names agree as
    well, the one whose rest maps by name comes first: the candidates are cut at MAX_FUSED.
    ``named``: each role's layers named like it."""
    taken_roles = {r for p in combo for r in p.roles}
    taken_layers = {l.name for p in combo for l in p.layers}
    return sum(bool(layers - taken_layers) for role, layers in named.items() if role not in taken_roles)


def _combine(roles: list[Role], by_name: dict[str, Role], combo, plain: Mapping) -> Mapping:
    mapping = Mapping(layers={}, by_name=False, notes=list(plain.notes), zero_bias=set(plain.zero_bias),
                      transposed=set(plain.transposed))
    shown = dict(plain.layers)
    for p in combo:
        layer = p.layers[0]
        mapping.notes.append(MappingNote(p.kind, ", ".join(p.roles), p.shown))
        unbiased = [role for role in p.roles if by_name[role].bias is not None and layer.bias is None]
        for role in p.roles:
            shown[role] = p.shown
            mapping.rows[role] = p.rows[role]
        mapping.zero_bias.update(unbiased)
        if unbiased:  # one note for the layer, whatever the number of roles it holds
            mapping.notes.append(MappingNote("zero_bias", ", ".join(unbiased), p.shown))
        if layer.transposed:
            mapping.transposed.update(p.roles)
            mapping.notes.append(MappingNote("transposed", ", ".join(p.roles), p.shown))
    mapping.layers = {r.name: shown[r.name] for r in roles}
    return mapping


def params_of(module: torch.nn.Module, layer_name: str, index: tuple[dict, dict] | None = None
              ) -> tuple[torch.nn.Parameter, torch.nn.Parameter | None, list[str]]:
    """A layer's weight and bias parameters (a module's, or a bare weight and its partner), and
    their names. ``index``: ``module``'s (named modules, named parameters), from :func:`_index`,
    for a caller that asks of many layers of one module (a role spread over per-head layers)."""
    subs, params = index or _index(module)
    if layer_name in params and layer_name not in subs:
        owner, _, leaf = layer_name.rpartition(".")
        own = dict(subs[owner].named_parameters(recurse=False))
        b = bias_partner(leaf, own)
        bias_name = f"{owner}.{b}".lstrip(".") if b is not None else list_bias((subs, params), layer_name)
        bias = params.get(bias_name) if bias_name else None
        shared = shared_bias(own).get(leaf)
        if bias is not None and shared is not None:
            bias = bias[shared[1]:shared[2]]  # a view: loading writes into the vector's slice
        return params[layer_name], bias, [layer_name] + ([bias_name] if bias_name else [])
    sub = subs[layer_name]
    stored = originals(sub)
    weight, bias = stored.get("weight", sub.weight), stored.get("bias", getattr(sub, "bias", None))
    bias = bias if isinstance(bias, torch.nn.Parameter) else None

    def path(leaf: str) -> str:
        return f"{layer_name}.{f'parametrizations.{leaf}.original' if leaf in stored else leaf}".lstrip(".")

    beside = outside_bias((subs, params), layer_name) if bias is None else None
    if beside is not None:  # a vector of the module holding the layer (q_bias beside q_proj)
        return weight, params[beside], [path("weight"), beside]
    return weight, bias, [path("weight")] + ([path("bias")] if bias is not None else [])


def _index(module: torch.nn.Module) -> tuple[dict, dict]:
    """``module``'s named modules and named parameters, each by its name."""
    return dict(module.named_modules()), dict(module.named_parameters())


class RowsGrad:
    """The gradient of a role whose rows live in slices of the attempt's layers: those slices of
    the layers' gradients, concatenated (None while any is missing). Stands in for a parameter
    in the gradient leaves."""

    def __init__(self, pieces: list[tuple[torch.Tensor, tuple[int, ...]]], transposed: bool):
        self.pieces, self.transposed = pieces, transposed

    @property
    def grad(self) -> torch.Tensor | None:
        grads = [p.grad for p, _ in self.pieces]
        if any(g is None for g in grads):
            return None
        parts = [g[:, list(i)].t() if self.transposed else g[list(i)] for g, (_, i) in zip(grads, self.pieces)]
        return torch.cat(parts, 0)


def rows_leaves(module: torch.nn.Module, rows: dict, transposed) -> tuple[dict[str, RowsGrad], set[str]]:
    """Gradient leaves for the roles in ``rows`` (``q_proj.weight``, ``q_proj.bias``), and the
    attempt's parameter names they cover."""
    leaves, covered = {}, set()
    named = _index(module)
    for role, pieces in rows.items():
        weights, biases = [], []
        for layer_name, index in pieces:
            w, b, names = params_of(module, layer_name, named)
            covered.update(names)
            weights.append((w, index))
            biases.append((b, index))
        leaves[f"{role}.weight"] = RowsGrad(weights, role in transposed)
        if all(b is not None for b, _ in biases):
            leaves[f"{role}.bias"] = RowsGrad(biases, False)
    return leaves, covered


def _finish(roles: list[Role], chosen: dict[str, Layer], named: bool) -> Mapping:
    mapping = Mapping(layers={r.name: chosen[r.name].name for r in roles}, by_name=named)
    for role in roles:
        layer = chosen[role.name]
        if layer.name != role.name and (role.named(layer.name) or (named and role.named(layer.name, leaf=True))):  # by another name
            mapping.notes.append(MappingNote("alias", role.name, layer.name))
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
    named = _index(module)  # loading changes values, never which layers there are: looked up once
    for role, pieces in mapping.rows.items():
        weight, bias, start = weights[role]["weight"], weights[role].get("bias"), 0
        for layer_name, index in pieces:
            w, b, names = params_of(module, layer_name, named)
            rows = list(index)
            part = weight[start:start + len(rows)]
            if role in mapping.transposed:
                w[:, rows] = part.t().to(w.dtype)
            else:
                w[rows] = part.to(w.dtype)
            if b is not None and bias is not None:
                b[rows] = bias[start:start + len(rows)].to(b.dtype)
            used.update(names)
            start += len(rows)
    for role, layer_name in mapping.layers.items():
        if role in mapping.rows:
            continue
        weight = weights[role]["weight"]
        w, b, names = params_of(module, layer_name, named)  # a module's weight and bias, or a bare matrix and its vector
        w.copy_(weight.t() if role in mapping.transposed else weight)
        used.add(names[0])
        if b is not None and "bias" in weights[role]:
            b.copy_(weights[role]["bias"])
            used.add(names[1])
    g = torch.Generator().manual_seed(12345)
    for name, p in module.named_parameters():
        # a frozen parameter no role takes is a constant kept as a parameter (RoFormer's
        # nn.Parameter(inv_freq, requires_grad=False)): no weight to seed, its values stay
        if name not in used and p.requires_grad:
            p.copy_(torch.rand(p.shape, generator=g).to(p.dtype) - 0.5)

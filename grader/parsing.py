"""The syntax tree of a source text, parsed once and shared.

Finding where a failing attempt goes wrong asks a dozen questions of its file's syntax, and of the
reference's (the function holding a line, the lines that keep an argument, the helpers called …),
some once per traced step: parsing the text for each cost more than the answers. The tree is
shared by every question: read it, never change it.
"""

from __future__ import annotations

import ast
import functools


@functools.lru_cache(maxsize=32)
def parsed(source: str) -> ast.Module:
    """``ast.parse(source)``, kept for the last sources asked about. Raises as ``ast.parse`` does
    (a source that does not parse is not kept: it raises again)."""
    return ast.parse(source)


# id of a node of a shared tree -> (the node, its walk): a failing attempt's tree is walked whole by a
# dozen questions (the statement at a line, the lines that keep an argument, where an attribute is set …)
_WALKS: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}
WALKS_KEPT = 256


def walk(node: ast.AST) -> tuple[ast.AST, ...]:
    """``ast.walk(node)`` as a tuple, in its order, kept for the last nodes asked about: for the
    nodes of trees :func:`parsed` shares (nothing changes them)."""
    return kept_for(_WALKS, node, lambda n: tuple(ast.walk(n)), WALKS_KEPT)


def kept_for(table: dict, node, make, bound: int):
    """``make(node)``, kept in ``table`` by the node's identity (with the node, so that an id
    reused by another object is not taken for it); ``table`` starts again past ``bound`` entries.
    For what is worked out of a tree :func:`parsed` shares."""
    kept = table.get(id(node))
    if kept is None or kept[0] is not node:
        if len(table) >= bound:
            table.clear()
        kept = table[id(node)] = node, make(node)
    return kept[1]


def top_function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The module-level ``def name`` of ``tree`` (the first), or None."""
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def named_functions(tree: ast.AST, nested: bool = False) -> list[tuple[str, ast.FunctionDef]]:
    """(name, def) of the file's functions in source order, a method named ``Class.method``: the
    top-level functions and the top-level classes' methods; with ``nested``, every function anywhere
    (one defined inside a function is named by itself)."""
    found = []

    def visit(node, owner: str, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((f"{owner}.{child.name}" if owner else child.name, child))
                if nested:
                    visit(child, "", False)
            elif isinstance(child, ast.ClassDef):
                if nested or top:
                    visit(child, child.name, False)
            elif nested:
                visit(child, owner, False)

    visit(tree, "", True)
    return found


def last_name(node) -> str | None:
    """The name a ``Name`` or an ``Attribute`` ends with (``sigmoid`` of ``torch.sigmoid``, ``act``
    of ``self.act``), the name a call calls when given its ``func``; None for any other node."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def defaults(function) -> list[tuple[ast.arg, ast.expr]]:
    """(parameter, its default) of ``function`` (a ``def`` or a lambda): the positional ones
    (positional-only included) that have one, then the keyword-only ones that have one."""
    a = function.args
    positional = [*a.posonlyargs, *a.args]
    return [*zip(positional[len(positional) - len(a.defaults):], a.defaults),
            *((p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)]

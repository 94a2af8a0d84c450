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

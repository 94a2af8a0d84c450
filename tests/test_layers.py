"""The grader does not import the shell: the dependency points from the shell (the CLI, the
workspace, the texts, the history …) to the grader, never back. What the grader needs of the shell
comes in as an argument (``grade(..., protect=(data folder,))``) or from the registry both sides use
(:mod:`attnprep.exercises`: the exercises, their stubs and ``is_blank``).

Scanned by the source's imports (an AST walk, so an import inside a function counts too), with the
shell's modules read from the ``attnprep/`` folder: a new shell module is covered without editing
this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRADER = ROOT / "grader"
SHELL = ROOT / "attnprep"
# attnprep.grader itself, the registry both sides read, the reference solutions the grading side runs
NOT_SHELL = {"grader", "exercises", "solutions"}


def shell_modules() -> set[str]:
    """``attnprep.<name>`` of every module and package of the shell's folder."""
    names = {p.stem for p in SHELL.glob("*.py") if p.stem not in ("__init__", "__main__")}
    names |= {p.name for p in SHELL.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    return names - NOT_SHELL


def imported(source: str, package: str) -> set[str]:
    """Every module name ``source`` imports, absolute (``package``: the dotted name of the package
    the file is in, for relative imports); ``from a import b`` counts as both ``a`` and ``a.b``
    (``b`` may be a module); ``importlib.import_module("…")`` with a constant name counts too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return found


def shell_imports(source: str, package: str) -> list[str]:
    """The shell modules (``attnprep.<name>``) ``source`` imports, or imports from."""
    shell = shell_modules()
    return sorted({".".join(name.split(".")[:2]) for name in imported(source, package)
                   if name.startswith("attnprep.") and name.split(".")[1] in shell})


def grader_files() -> list[Path]:
    return sorted(GRADER.rglob("*.py"))


def _package(path: Path) -> str:
    parts = path.relative_to(GRADER).with_suffix("").parts
    return ".".join(("attnprep", "grader", *parts[:-1]))


def test_the_scan_sees_every_way_of_importing_the_shell():
    """The scanner itself: each spelling of an import of a shell module is found, in a function
    too; the grader's own modules, the registry and the solutions are not the shell."""
    assert {"paths", "workspace", "texts", "app", "report", "commands", "wording"} <= shell_modules()
    assert not NOT_SHELL & shell_modules()
    caught = {
        "from attnprep.paths import data_path": ["attnprep.paths"],
        "from attnprep import workspace": ["attnprep.workspace"],
        "import attnprep.texts as t": ["attnprep.texts"],
        "def f():\n    from attnprep.commands.grading import run_checks": ["attnprep.commands"],
        "from ... import report": ["attnprep.report"],
        "import importlib\nimportlib.import_module('attnprep.history')": ["attnprep.history"],
    }
    for source, names in caught.items():
        assert shell_imports(source, "attnprep.grader.kinds") == names, source
    fine = ("from attnprep import exercises\nfrom attnprep.exercises import evaluate\n"
            "from attnprep.grader import sandbox\nfrom . import base\nfrom .. import judge\n"
            "import importlib\nimportlib.import_module('attnprep.solutions.mha')")
    assert shell_imports(fine, "attnprep.grader.kinds") == []


@pytest.mark.parametrize("path", grader_files(), ids=lambda p: str(p.relative_to(GRADER)))
def test_the_grader_does_not_import_the_shell(path):
    found = shell_imports(path.read_text(encoding="utf-8"), _package(path))
    assert not found, f"grader/{path.relative_to(GRADER)} imports the shell: {', '.join(found)}"


def test_the_engine_reads_only_what_the_judge_returns():
    """The engine does not read the judge's attributes, which are filled in while ``result()`` runs:
    it gets the result as a return value and where the outputs failed through the ``compared``
    callback (engine._Failing). Checked on the source: a Judge object is used for ``result`` only."""
    tree = ast.parse((GRADER / "engine.py").read_text(encoding="utf-8"))
    judges = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
              and getattr(node.value.func, "attr", "") == "Judge" for t in node.targets if isinstance(t, ast.Name)}
    assert judges, "the engine makes its Judge somewhere"
    read = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id in judges}
    assert read == {"result"}
    passed = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
              for arg in [*node.args, *(k.value for k in node.keywords)] if isinstance(arg, ast.Name) and arg.id in judges]
    assert passed == [], "the Judge object is handed on (someone would read its attributes)"


def _defined_twice(tree: ast.Module) -> list[str]:
    """Names a module (or one of its classes) defines twice with ``def`` / ``class``, the later
    silently replacing the earlier; decorated methods aside (a property's setter repeats its name)."""
    twice = []
    for scope, body in [("", tree.body)] + [(f"{c.name}.", c.body) for c in tree.body if isinstance(c, ast.ClassDef)]:
        seen: set[str] = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not (scope and node.decorator_list):
                if node.name in seen:
                    twice.append(f"{scope}{node.name} (line {node.lineno})")
                seen.add(node.name)
    return twice


def test_the_scan_for_names_defined_twice_sees_them():
    tree = ast.parse("def f(): pass\nclass C:\n    def g(self): pass\n    def g(self): pass\ndef f(): return 1\n")
    assert _defined_twice(tree) == ["f (line 5)", "C.g (line 4)"]
    assert _defined_twice(ast.parse("class C:\n    @property\n    def x(self): pass\n    @x.setter\n    def x(self, v): pass\n")) == []


@pytest.mark.parametrize("path", sorted([*GRADER.rglob("*.py"), *SHELL.rglob("*.py")]), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_name_is_defined_twice(path):
    """A second ``def`` of a name replaces the first for every caller: a helper written again under
    an old name (``divergence._function_at``, a node where two rules compared names) turned those
    rules off without a failing test."""
    assert _defined_twice(ast.parse(path.read_text(encoding="utf-8"))) == []

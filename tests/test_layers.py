"""The package's architecture, enforced: layers import only downwards, no cycles, no private names.

Layers, lowest first (DEVELOPERS.md, "Layout"):

0. ``_validate``, ``_version``, ``config``, ``streams``
1. ``stats``, ``data``, ``sweep``, ``provenance``
2. ``theory.*``: closed forms; besides ``theory.*`` it may import only ``_validate``
3. ``models.*``
4. ``experiments.*``
5. ``figures.*``
6. ``cli``, ``sphinxext``, ``__main__`` and the package face ``transferkit/__init__.py``

A module may import from its own layer or below. The checks read the source with :mod:`ast`,
so they see every import, at module level or inside a function.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from transferkit.sphinxext import public_objects

PKG = Path(__file__).resolve().parents[1] / "transferkit"

LAYERS = {
    "_validate": 0, "_version": 0, "config": 0, "streams": 0,
    "stats": 1, "data": 1, "sweep": 1, "provenance": 1,
    "theory": 2, "models": 3, "experiments": 4, "figures": 5,
    "cli": 6, "sphinxext": 6, "__main__": 6, "": 6,
}


def module_name(path: Path) -> str:
    """Dotted name below ``transferkit`` ('' for the package face, 'theory' for its ``__init__``)."""
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_package(name: str) -> bool:
    return (PKG / name.replace(".", "/") / "__init__.py").is_file() if name else True


def exists(name: str) -> bool:
    return is_package(name) or (PKG / (name.replace(".", "/") + ".py")).is_file()


def layer(name: str) -> int:
    return LAYERS[name.split(".")[0]]


def imports(path: Path):
    """``(target module, imported name or None, line)`` for every import of a transferkit module."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "transferkit" or node.module.startswith("transferkit.")):
                target = node.module[len("transferkit."):] if node.module != "transferkit" else ""
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                if exists(sub):
                    yield sub, None, node.lineno
                else:
                    yield target, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "transferkit" or alias.name.startswith("transferkit."):
                    yield alias.name[len("transferkit."):] if alias.name != "transferkit" else "", None, node.lineno


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def test_every_module_has_a_layer():
    assert all(name.split(".")[0] in LAYERS for name in MODULES), sorted(
        name for name in MODULES if name.split(".")[0] not in LAYERS)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_follow_the_layer_order(name):
    bad = []
    for target, _, line in imports(MODULES[name]):
        if name == "" or target == name:
            continue
        if layer(target) > layer(name):
            bad.append(f"line {line}: {name or 'transferkit'} (layer {layer(name)}) imports {target} "
                       f"(layer {layer(target)})")
        if name.split(".")[0] == "theory" and target.split(".")[0] not in ("theory", "_validate"):
            bad.append(f"line {line}: theory imports {target} (only theory.* and _validate allowed)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_names_of_other_modules(name):
    bad = [f"line {line}: imports {imported} from {target or 'transferkit'}"
           for target, imported, line in imports(MODULES[name])
           if imported and imported.startswith("_") and not imported.startswith("__")]
    assert not bad, "\n".join(bad)


#: Dependencies a function may import where it needs them: optional extras (``book``,
#: ``cluster``) that a plain install lacks, and numpy's private module moved in numpy 2.
LAZY_OK = ("IPython", "distributed", "jupytext", "nbclient", "sphinx", "docutils",
           "numpy._core", "numpy.core")


def function_level_imports(path: Path):
    """``(module, line)`` of every import statement inside a function of ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom):
                    yield "." * sub.level + (sub.module or ""), sub.lineno
                elif isinstance(sub, ast.Import):
                    for alias in sub.names:
                        yield alias.name, sub.lineno


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_at_the_top(name):
    """Imports stand at the top of the module (DEVELOPERS.md); a function imports only an
    optional extra (:data:`LAZY_OK`), so that a plain install can import every module."""
    bad = [f"line {line}: import of {mod} inside a function"
           for mod, line in function_level_imports(MODULES[name])
           if not any(mod == ok or mod.startswith(ok + ".") for ok in LAZY_OK)]
    assert not bad, "\n".join(bad)


def import_graph() -> dict:
    """Module -> modules it imports; a package also depends on the submodules its face imports."""
    graph = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in imports(path):
            if target != name and target in graph:
                graph[name].add(target)
    return graph


def find_cycle(graph: dict):
    """One cycle of ``graph`` as a list of nodes, or ``None`` (iterative depth-first search)."""
    colour = dict.fromkeys(graph, 0)
    for root in graph:
        if colour[root]:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if colour[child] == 1:
                    return path[path.index(child):] + [child]
                if colour[child] == 0:
                    colour[child] = 1
                    stack.append((child, iter(sorted(graph[child]))))
                    path.append(child)
                    break
            else:
                colour[node] = 2
                stack.pop()
                path.pop()
    return None


def test_no_import_cycles():
    graph = import_graph()
    # the package faces import their submodules; a submodule importing its own package face
    # (``from .. import theory`` inside theory/) would close a loop through it
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(c or "transferkit" for c in cycle)


def test_the_checks_can_fail(tmp_path):
    """The checks catch a layer violation, a cycle, a private import and a function-level one."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert layer("theory.deep_linear") < layer("models.relu") < layer("experiments.lazy_rich")
    fake = PKG / "theory" / "_layer_probe.py"
    fake.write_text("from ..experiments import deep_linear\nfrom .deep_linear import _scratch\n"
                    "def f():\n    import numpy\n")
    try:
        MODULES["theory._layer_probe"] = fake
        with pytest.raises(AssertionError, match="imports experiments.deep_linear"):
            test_imports_follow_the_layer_order("theory._layer_probe")
        with pytest.raises(AssertionError, match="imports _scratch"):
            test_no_private_names_of_other_modules("theory._layer_probe")
        with pytest.raises(AssertionError, match="import of numpy inside a function"):
            test_imports_at_the_top("theory._layer_probe")
    finally:
        MODULES.pop("theory._layer_probe", None)
        fake.unlink()


def test_public_names_are_unique():
    """No two public functions (or classes) with one name for different things. Public: what
    the API reference documents (:func:`transferkit.sphinxext.public_objects`, every name
    without a leading underscore that a public module defines)."""
    by_name: dict[str, list] = {}
    for qualified in public_objects():
        by_name.setdefault(qualified.rsplit(".", 1)[1], []).append(qualified)
    dup = {n: sorted(q) for n, q in by_name.items() if len(q) > 1}
    assert not dup, dup

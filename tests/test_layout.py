"""The package's import graph: no circles, synth/ used only by its consumers, imports at
module top unless a comment says why (a heavy optional dependency)."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "hf_real3d"
# modules allowed to import hf_real3d.synth (the producer) besides synth itself
SYNTH_USERS = {"hf_real3d.demo", "hf_real3d.cli"}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for f in PKG.rglob("*.py"):
        name = ".".join(f.relative_to(PKG.parent).with_suffix("").parts).removesuffix(
            ".__init__")
        out[name] = ast.parse(f.read_text())
    return out


def _resolve(name: str, mods: dict) -> str:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


def _imports(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {f for f in found if f.startswith("hf_real3d")}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: {_resolve(d, mods) for d in _imports(t)} - {m, "", "hf_real3d"}
            for m, t in mods.items()}


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(m, path):
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(path[path.index(d):] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    # a package __init__ importing its own submodules is not a cycle
    real = [c for c in cycles if not all(x.startswith(c[0].rpartition(".")[0]) and
                                         c[0].count(".") != x.count(".") for x in c[1:])]
    assert not real, real


def test_synth_is_only_imported_by_its_consumers():
    offenders = sorted(m for m, deps in _graph().items()
                       if not m.startswith("hf_real3d.synth") and m not in SYNTH_USERS
                       and any(d.startswith("hf_real3d.synth") for d in deps))
    assert not offenders, offenders


def test_local_imports_say_why():
    """An import inside a function needs a comment on the line above saying why."""
    unexplained = []
    for f in PKG.rglob("*.py"):
        lines = f.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        k = sub.lineno - 2  # the comment may stand above a block of imports
                        while k > 0 and lines[k].strip().startswith(("import ", "from ")):
                            k -= 1
                        if not lines[k].strip().startswith("#") and \
                                "# " not in lines[sub.lineno - 1]:
                            unexplained.append(f"{f.relative_to(PKG.parent)}:{sub.lineno}")
    assert not unexplained, unexplained

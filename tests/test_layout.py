"""The package's import graph: no circles between modules, no arrow running back up between
the package's parts (its top-level modules and subpackages), synth/ used only by its
consumers, imports at module top unless a comment says why (a heavy optional dependency)."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "hf_real3d"
# parts allowed to import hf_real3d.synth (the producer) besides synth itself
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


def _part(module: str) -> str:
    """The part a module belongs to: ``hf_real3d.X`` for a top-level module or a subpackage."""
    return ".".join(module.split(".")[:2])


def _part_graph() -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for m, deps in _graph().items():
        parts.setdefault(_part(m), set()).update(_part(d) for d in deps)
    return {p: deps - {p, "hf_real3d"} for p, deps in parts.items()}


def _arrows_back_up(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges a -> b where b also reaches a: the parts do not stack in layers."""
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for d in graph.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    return sorted((a, b) for a in graph for b in graph[a] if a in reach(b))


def test_parts_stack_in_layers():
    """No arrow runs back up: the graph of the package's parts (a subpackage counts as one)
    has no circle, so e.g. srbench/ never imports a top-level module that imports srbench/."""
    back = _arrows_back_up(_part_graph())
    detail = {(a, b): sorted(f"{m} -> {d}" for m, deps in _graph().items() for d in deps
                             if _part(m) == a and _part(d) == b) for a, b in back}
    assert not back, detail


def test_the_arrow_check_finds_a_planted_arrow():
    graph = {"hf_real3d.srbench": {"hf_real3d.report"}, "hf_real3d.report": {"hf_real3d.tables"},
             "hf_real3d.tables": set()}
    assert _arrows_back_up(graph) == []
    graph["hf_real3d.report"].add("hf_real3d.srbench")
    assert _arrows_back_up(graph) == [("hf_real3d.report", "hf_real3d.srbench"),
                                      ("hf_real3d.srbench", "hf_real3d.report")]


def test_generic_report_knows_no_demo_arm():
    """report.py serves `evaluate`, `evaluate-3dsrbench` and the explorer: the demo's models
    and settings live in hf_real3d/demo/."""
    text = (PKG / "report.py").read_text()
    for word in ("sft_more", "3drft", "hidden_size", "blind", "srbench"):
        assert word not in text, word


def test_synth_is_only_imported_by_its_consumers():
    offenders = sorted(m for m, deps in _graph().items()
                       if not m.startswith("hf_real3d.synth") and _part(m) not in SYNTH_USERS
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


def test_one_markdown_table_writer():
    """Every Markdown table is written by hf_real3d.tables.markdown_table: no other module
    spells a table's separator row."""
    spelled = sorted(str(f.relative_to(PKG.parent)) for f in PKG.rglob("*.py")
                     if f.name != "tables.py" and ("|---" in f.read_text()
                                                   or '"---|' in f.read_text()))
    assert not spelled, spelled


def test_one_seed_statistics_helper():
    """Mean and std over seeds come from hf_real3d.stats: the demo's findings, report and
    summary compute neither themselves (the stages compute per-seed accuracies)."""
    for f in (PKG / "demo" / n for n in ("findings.py", "report.py", "results.py")):
        text = f.read_text()
        for spelled in (".std(", "np.std", "np.mean(", ".mean()"):
            assert spelled not in text, (f.name, spelled)

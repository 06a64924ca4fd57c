"""The package's import graph: no circles between modules, no arrow running back up between
the package's parts (its top-level modules and subpackages), synth/ used only by its
consumers, imports at module top unless a comment says why (a heavy optional dependency)."""

import ast
import functools
import re
import sys
from collections import Counter
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "hf_real3d"
# parts allowed to import hf_real3d.synth (the producer) besides synth itself (the recipes
# build the embedded default dataset when absent)
SYNTH_USERS = {"hf_real3d.demo", "hf_real3d.cli", "hf_real3d.recipes"}


@functools.cache  # parsed once per run: the package's files do not change under the tests
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


# an import written in a string: code run by `python -c`, a subprocess or exec
_STRING_IMPORT = re.compile(r"\b(?:from|import)\s+(hf_real3d(?:\.\w+)*)")


def _imports(tree: ast.Module) -> set[str]:
    """Every module a module imports: import statements, ``import_module("...")`` /
    ``__import__("...")`` calls with a literal name, and imports written in strings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__"):
                found.add(node.args[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(_STRING_IMPORT.findall(node.value))
    return {f for f in found if f.startswith("hf_real3d")}


@functools.cache  # read only by the tests
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


def test_imports_in_strings_and_import_module_are_seen():
    tree = ast.parse('import importlib, subprocess, sys\n'
                     'importlib.import_module("hf_real3d.cli")\n'
                     'subprocess.run([sys.executable, "-c", "from hf_real3d.demo import run"])\n')
    assert _imports(tree) == {"hf_real3d.cli", "hf_real3d.demo"}


def test_training_never_runs_the_command_line():
    for m, deps in _graph().items():
        if _part(m) == "hf_real3d.training":
            assert "hf_real3d.cli" not in deps, m


def test_the_arrow_check_finds_a_planted_arrow():
    graph = {"hf_real3d.srbench": {"hf_real3d.stats"}, "hf_real3d.stats": {"hf_real3d.tables"},
             "hf_real3d.tables": set()}
    assert _arrows_back_up(graph) == []
    graph["hf_real3d.stats"].add("hf_real3d.srbench")
    assert _arrows_back_up(graph) == [("hf_real3d.srbench", "hf_real3d.stats"),
                                      ("hf_real3d.stats", "hf_real3d.srbench")]


def test_generic_report_knows_no_demo_arm():
    """real3dqa/report.py serves `evaluate` and the explorer: the demo's models and settings
    live in hf_real3d/demo/."""
    text = (PKG / "real3dqa" / "report.py").read_text()
    for word in ("sft_more", "3drft", "hidden_size", "blind", "srbench"):
        assert word not in text, word


BENCHMARKS = ("real3dqa", "real_scanqa", "srbench")
SHAPE = ("format", "build", "predictions", "evaluate", "report")


def test_every_benchmark_has_the_same_shape():
    """Each benchmark package holds format, build, predictions, evaluate and report."""
    for bench in BENCHMARKS:
        missing = [m for m in SHAPE if not (PKG / bench / f"{m}.py").is_file()]
        assert not missing, f"{bench}/ lacks {missing}"


def test_benchmark_packages_hold_no_training():
    """Experiments that train (the demo's studies) and predictions of trained models live
    in demo/ and training/, not in a benchmark."""
    for m, deps in _graph().items():
        if _part(m) in {f"hf_real3d.{b}" for b in BENCHMARKS}:
            bad = sorted(d for d in deps if d.startswith(("hf_real3d.training",
                                                          "hf_real3d.demo")))
            assert not bad, f"{m} imports {bad}"


def test_synth_is_only_imported_by_its_consumers():
    offenders = sorted(m for m, deps in _graph().items()
                       if not m.startswith("hf_real3d.synth") and _part(m) not in SYNTH_USERS
                       and any(d.startswith("hf_real3d.synth") for d in deps))
    assert not offenders, offenders


def test_training_builds_no_data_and_knows_no_demo():
    """training/ reads built datasets: building the default one is the recipes' business,
    and the demo's arm names and roles live in demo/ (issue 50)."""
    graph = _graph()
    for m, deps in graph.items():
        if _part(m) == "hf_real3d.training":
            bad = sorted(d for d in deps if d.startswith(("hf_real3d.synth", "hf_real3d.demo")))
            assert not bad, f"{m} imports {bad}"
    from hf_real3d.demo.config import ROLES

    arms = set(ROLES) - {"sft", "blind"}  # the demo's own names ("sft", "blind" are words)
    for f in (PKG / "training").glob("*.py"):
        text = f.read_text()
        said = [arm for arm in sorted(arms) if f'"{arm}"' in text] + \
            [w for w in ("demo_arm", "demo_role") if w in text]
        assert not said, (f.name, said)


def test_the_recipes_are_the_one_training_flow():
    """The flow (data, model, trainer, train, save) is spelled out in hf_real3d/recipes/ alone:
    the training package holds no function that builds a trainer and trains it, the demo
    trains its models through the recipes' main, and the clone's recipes/*.py hold no flow
    (launchers of the packaged ones)."""
    trains = []
    for f in [*(PKG / "training").glob("*.py"), *(PKG.parent / "recipes").glob("*.py")]:
        text = f.read_text()
        if "Trainer(" in text and ".train(" in text:
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef):
                    body = ast.unparse(node)
                    if "Trainer(" in body and ".train(" in body:
                        trains.append(f"{f.relative_to(PKG.parent)}:{node.name}")
    assert not trains, trains
    for name in ("sft", "blind_ft", "threedrft", "threedrft_vlm"):
        main = next(n for n in ast.walk(ast.parse((PKG / "recipes" / f"{name}.py").read_text()))
                    if isinstance(n, ast.FunctionDef) and n.name == "main")
        body = ast.unparse(main)
        assert "Trainer(" in body and ".train(" in body and "save" in body, name
    assert "load_recipe(job.recipe).main(" in (PKG / "demo" / "pool.py").read_text()


def test_no_module_reads_code_from_outside_the_package():
    """A wheel has no clone around it: no module of the package loads a file as code
    (``spec_from_file_location``, ``exec``, ``runpy``), nor reaches above the package's
    folder (``parents[1]`` or higher of its own path) or into a clone's ``recipes/``."""
    found = []
    for f in PKG.rglob("*.py"):
        text = f.read_text()
        for spelled in ("spec_from_file_location", "exec_module", "runpy", "SourceFileLoader",
                        "parents[1]", "parents[2]", '"recipes"', "'recipes'", '/ "recipes/'):
            # _lazy.py's loader of moved module names runs no code: it hands back the module
            # that importlib.import_module gives for the new name (tested above)
            if spelled in text and not (f.name == "_lazy.py" and spelled == "exec_module"):
                found.append(f"{f.relative_to(PKG.parent)}: {spelled}")
    assert not found, found


def test_local_imports_say_why():
    """An import inside a function needs a comment on the line above saying why; a command's
    (``cmd_*`` in cli/) imports of the library are the rule cli/__init__.py states once."""
    assert "Each command (a ``cmd_*`` function) imports the library modules" in \
        (PKG / "cli" / "__init__.py").read_text()
    unexplained = []
    for f in PKG.rglob("*.py"):
        lines = f.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if f.parent.name == "cli" and node.name.startswith("cmd_"):
                    continue  # the rule cli/__init__.py states
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


def test_package_namespace_is_its_public_names():
    import types

    import hf_real3d

    # submodules some other code imported are attributes of any package; the rest is ours
    own = [n for n in dir(hf_real3d) if not n.startswith("_")
           and not isinstance(getattr(hf_real3d, n), types.ModuleType)]
    assert own == ["METRICS", "metric_path"]


# what a module looks for in a folder to tell what it is: only hf_real3d/sources.py may
_KIND_PROBES = re.compile(
    r'"README\.md"\)\.(?:is_file|exists)\(\)|"rotation_0\.json"\)\.(?:is_file|exists)\(\)|'
    r'"(?:state|dataset_dict)\.json"\)\.is_file\(\)|glob\("\*_questions_\*|'
    r'suffix == "\.tsv"|split_paths\([^)]*\)\[0\]\.is_file\(\)|glob\("\*\*/\*\.parquet"\)')


def test_one_reader_of_inputs():
    """No module outside hf_real3d/sources.py opens a folder to guess its kind; they ask
    sources.resolve."""
    guessing = sorted(f"{f.relative_to(PKG.parent)}:{n}" for f in PKG.rglob("*.py")
                      if f.name != "sources.py"
                      for n, line in enumerate(f.read_text().splitlines(), 1)
                      if _KIND_PROBES.search(line))
    assert not guessing, guessing


def test_every_public_name_is_reached():
    """Each name a module exports (``__all__``) is used beyond its own definition: by the
    package, a recipe, a metric module, a dataset script or the documentation's pages. A name
    only tests reach is not the library's (issue 50: dead code is deleted or moved)."""
    readers = [*PKG.rglob("*.py"), *(PKG.parent / "recipes").glob("*.py"),
               *(PKG.parent / "dataset_scripts").rglob("*.py"),
               *(PKG.parent / "docs").rglob("*.md"), PKG.parent / "README.md",
               PKG.parent / "setup.cfg"]
    texts = {p: p.read_text() for p in readers}
    words = {p: Counter(re.findall(r"\w+", t)) for p, t in texts.items()}
    files_with = Counter(w for c in words.values() for w in c)  # files each word is in
    unreached = []
    for f in sorted(PKG.rglob("*.py")):
        tree = ast.parse(texts[f])
        names = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "__all__"
                              for t in n.targets)), [])
        for name in names:
            elsewhere = files_with[name] - (name in words[f]) > 0
            if not elsewhere and words[f][name] <= 2:  # __all__ + definition
                unreached.append(f"{f.relative_to(PKG.parent)}:{name}")
    assert not unreached, unreached


def test_synth_reads_english_from_the_floor_not_from_real3dqa():
    """synth/ (a producer) and the English floor import nothing of real3dqa/: the reader of
    texts sits below both benchmarks' construction."""
    for m, deps in _graph().items():
        if _part(m) in ("hf_real3d.synth", "hf_real3d.english"):
            assert not {d for d in deps if d.startswith("hf_real3d.real3dqa")}, m


def test_the_moved_modules_still_import_for_one_release():
    """Issue 61's moves keep the old module names working (the same module object), with a
    DeprecationWarning naming the new place."""
    import importlib
    import warnings

    from hf_real3d.real3dqa import MOVED
    for old, new in MOVED.items():
        name = f"hf_real3d.real3dqa.{old}"
        sys.modules.pop(name, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(name)
        assert module is importlib.import_module(new), old
        assert any(new in str(w.message) for w in caught), old
        assert not (PKG / "real3dqa" / f"{old}.py").exists(), old
    from hf_real3d.real3dqa import CITATION, check_rotations  # noqa: F401

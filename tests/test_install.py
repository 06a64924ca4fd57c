"""The light install: ``pip install hf-real3d`` (no extras) loads and scores the benchmarks
without torch, open3d, transformers, trl, peft or accelerate; and a wheel carries its own
training flows (the recipes), which run outside a clone.

tests/light_install_script.py does what the base install must do (``hf-real3d evaluate`` on a
release-format folder and on an imported dataset folder, ``evaluate-3dsrbench``,
``check-rotations`` on the real release when it is here, ``load_dataset``,
``evaluate.load(metric_path("vrs"))``). The quick test runs it where those six packages cannot
be imported (a meta-path blocker on PYTHONPATH); the slow one installs this checkout without
extras into a fresh virtual environment and runs it there, and the console script too.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("light_install_script.py")
HEAVY = ("torch", "open3d", "transformers", "trl", "peft", "accelerate")

# sitecustomize.py for PYTHONPATH: every finder answers "no such module" for HEAVY, as in an
# environment where they were never installed (importlib.util.find_spec returns None, so
# datasets / scipy / evaluate take their no-torch paths; an import raises
# ModuleNotFoundError)
BLOCKER = f'''
import sys

BLOCKED = {set(HEAVY)!r}


class _Hide:
    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            return None
        return self.finder.find_spec(name, path, target)

    def __getattr__(self, attr):
        return getattr(self.finder, attr)


sys.meta_path[:] = [_Hide(f) if hasattr(f, "find_spec") else f for f in sys.meta_path]
'''

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "TQDM_DISABLE": "1"}


def _release(request) -> Path | None:
    """The official release folder when this machine has it (check-rotations runs on it)."""
    try:
        return request.getfixturevalue("real_dir") / "real3dqa"
    except pytest.skip.Exception:
        return None


def _run_script(python: str, work: Path, release: Path | None, env: dict) -> dict:
    work.mkdir()
    argv = [python, str(SCRIPT), str(work)] + (["--release", str(release)] if release else [])
    r = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((work / "results.json").read_text())


def _check(res: dict, work: Path, release: Path | None) -> None:
    """What the base install must have done (figures worked by hand from the script's data:
    two rotation groups, one wrong at 90 degrees: P_1..P_3 100, P_4 50, VRS 87.5)."""
    assert res["absent"] == {m: True for m in HEAVY}, res["absent"]
    assert res["torch_import"] == "ModuleNotFoundError"
    assert res["heavy_imported"] == []
    cmds = res["commands"]
    for name in ("evaluate_release", "import", "evaluate_folder", "evaluate_3dsrbench"):
        assert cmds[name]["rc"] == 0, (name, cmds[name]["stderr"])
    for name in ("evaluate_release", "evaluate_folder"):
        m = json.loads((work / name.replace("evaluate", "ev") / "metrics.json").read_text())[0]
        rot = m["rotation"]
        assert [rot[f"p_at_least_{k}"] for k in range(1, 5)] == [100.0, 100.0, 100.0, 50.0]
        assert rot["vrs"] == 87.5 and rot["groups"] == 2
        assert m["debiased"]["em"] == 100.0 and m["debiased"]["n"] == 3
        assert (work / name.replace("evaluate", "ev") / "pk.png").stat().st_size > 1000
    # the metric module scores the loaded dataset as the command does
    assert res["rotations_rows"] == 8
    vrs = res["vrs_metric"]
    assert vrs["vrs"] == 87.5 and vrs["p_at_least_4"] == 50.0 and vrs["groups"] == 2
    # 3DSRBench: always "A" (yes) is right on 3 of 4 rows, and on 1 of 2 flip pairs
    srb = json.loads((work / "srb" / "metrics.json").read_text())["file"]["m"]
    assert srb["vanilla"]["overall"] == 75.0 and srb["flip"]["overall"] == 50.0
    # a step that needs an extra says which, in one line, with exit code 2: the commands,
    # `hf-real3d train` and the clone's recipe launchers alike
    needs_train = [name for name in cmds if name.startswith("needs_train")]
    assert len(needs_train) == 6, needs_train
    for name, extra in ((name, "train") for name in needs_train):
        err = cmds[name]["stderr"].strip()
        assert cmds[name]["rc"] == 2 and "\n" not in err, (name, err)
        assert err.endswith(f"pip install 'hf-real3d[{extra}]'"), err
    if release is not None:
        assert cmds["check_rotations"]["rc"] == 0, cmds["check_rotations"]["stderr"][-2000:]
        check = json.loads((work / "checks" / "check.json").read_text())
        assert check["items"] == 2249 and check["groups"] == 750
        assert sum(check["verdicts"].values()) == check["items"]
        assert check["verdicts"]["defect"] > 0


def test_scoring_needs_no_torch_open3d_or_trainers(tmp_path, request):
    """The scoring paths in a process where torch, open3d, transformers, trl, peft and
    accelerate cannot be imported."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, **OFFLINE,
               PYTHONPATH=os.pathsep.join([str(blocker), str(ROOT)]))
    release = _release(request)
    res = _run_script(sys.executable, tmp_path / "work", release, env)
    assert Path(res["metric_path"]).is_relative_to(ROOT / "hf_real3d")
    _check(res, tmp_path / "work", release)


def test_the_blocker_blocks(tmp_path):
    """The quick test's blocker hides what it should (else that test would prove nothing),
    and nothing else."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    code = ("import importlib.util, json; "
            f"print(json.dumps({{m: importlib.util.find_spec(m) is None for m in "
            f"{list(HEAVY) + ['numpy', 'datasets']!r}}}))")
    env = dict(os.environ, PYTHONPATH=str(blocker))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert json.loads(out) == {**{m: True for m in HEAVY}, "numpy": False, "datasets": False}


def _copy_checkout(dst: Path) -> Path:
    """This checkout's sources (no virtual environment, outputs or build folders), so that
    pip builds in a copy and leaves nothing in the checkout."""
    top = {".git", ".venv", "outputs", "site", "data", "build", "dist"}

    def ignore(folder, names):
        skip = {n for n in names if n in ("__pycache__", ".pytest_cache", ".ruff_cache")
                or n.endswith(".egg-info")}
        return skip | (top & set(names) if Path(folder) == ROOT else set())

    shutil.copytree(ROOT, dst, symlinks=True, ignore=ignore)
    return dst


@pytest.fixture(scope="session")
def base_wheel(tmp_path_factory) -> Path:
    """This checkout as a wheel, built once per session from a copy of it (nothing written
    into the checkout) with the build tools this environment already has, instead of pip's
    isolated build environment."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _copy_checkout(tmp / "src")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return next((tmp / "dist").glob("hf_real3d-*.whl"))


@pytest.mark.slow
def test_base_install_in_a_fresh_venv(tmp_path, request, base_wheel):
    """``pip install hf-real3d`` (this checkout's wheel) without extras into a new virtual
    environment, its dependencies from the package cache ``make install`` filled: none of
    the six packages comes with it, the metric modules ship inside the package, and
    ``hf-real3d evaluate`` and the vrs module score there."""
    start = time.monotonic()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OFFLINE, HF_HOME=str(tmp_path / "hf_home"),
               PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    pip = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          "-c", str(ROOT / "constraints.txt"), str(base_wheel)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert pip.returncode == 0, pip.stderr[-3000:]
    installed = subprocess.run([python, "-m", "pip", "list", "--format=json"], env=env,
                               capture_output=True, text=True, check=True).stdout
    names = {p["name"].lower() for p in json.loads(installed)}
    assert "hf-real3d" in names
    assert not names & {"torch", "open3d", "open3d-cpu", "transformers", "trl", "peft",
                        "accelerate", "gradio", "openai"}, sorted(names)
    installed_at = time.monotonic() - start

    release = _release(request)
    work = tmp_path / "work"
    res = _run_script(python, work, release, env)
    # the metric module is the installed package's data, not this checkout's file
    metric = Path(res["metric_path"])
    assert metric.is_relative_to(venv) and (metric / "README.md").is_file(), metric
    _check(res, work, release)
    # the console script
    out = work / "ev_console"
    r = subprocess.run([str(venv / "bin" / "hf-real3d"), "evaluate", "--dataset",
                        str(work / "release"), "--predictions", f"m={work / 'preds.jsonl'}",
                        "--out", str(out)], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((out / "metrics.json").read_text())[0]["rotation"]["vrs"] == 87.5
    print(f"fresh venv: base install {installed_at:.0f} s, all {time.monotonic() - start:.0f} s")


def test_a_missing_extra_is_named(tmp_path, monkeypatch):
    """require() and the command line's error line name the extra that installs a missing
    package; a package no extra provides is named as it is."""
    import importlib.util

    import numpy as np

    from hf_real3d import _extras
    from hf_real3d.scene import Scene, SceneObject, read_scannet, write_scannet
    from hf_real3d.synth.render import Renderer

    err = ModuleNotFoundError("No module named 'trl'", name="trl.trainer")
    assert _extras.missing_extra_message(err) == \
        "No module named 'trl': pip install 'hf-real3d[train]'"
    err = ModuleNotFoundError("No module named 'nosuch'", name="nosuch")
    assert _extras.missing_extra_message(err) == "No module named 'nosuch'"
    _extras.require("json", what="reading JSON")  # present: nothing happens
    with pytest.raises(ImportError, match=r"^x needs nosuch_pkg_, which is not installed: "
                                          r"pip install nosuch_pkg_$"):
        _extras.require("nosuch_pkg_", what="x")
    # without open3d: ScanNet scenes are still written and read (plyfile), rendering is not
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "open3d" else real(name, *a))
    monkeypatch.setitem(sys.modules, "open3d", None)  # an import raises ModuleNotFoundError
    scene = Scene("scene0000_00", [SceneObject(1, "chair", (1, 0, 0.5), (0.5, 0.5, 1), 0.0, {},
                                               np.array([[1, 0, 0.5, 1, 0, 0]] * 3, float),
                                               np.array([[0, 1, 2]]))])
    write_scannet(scene, tmp_path)
    assert read_scannet(tmp_path, "scene0000_00").object(1).label == "chair"
    with pytest.raises(_extras.MissingExtraError) as info:
        Renderer(8, 8)
    assert str(info.value) == ("rendering scenes needs open3d, which is not installed: "
                               "pip install 'hf-real3d[scenes]'")
    assert info.value.name == "open3d"


def test_extras_agree_with_setup_cfg_and_makefile():
    """The base install has none of the heavy packages; every extra of setup.cfg is known to
    hf_real3d._extras (and the reverse), brings the packages _extras says it does, and `make
    install` installs every one (lmms-eval apart: the Makefile installs it without its
    dependency list)."""
    import configparser
    import re

    from hf_real3d._extras import EXTRAS

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")

    def names(value):
        return {re.split(r"[<>=\[ ]", line.strip())[0].lower()
                for line in value.splitlines() if line.strip()}

    base = names(cfg["options"]["install_requires"])
    assert not base & {"torch", "transformers", "trl", "peft", "accelerate", "open3d-cpu",
                       "open3d", "tokenizers", "safetensors", "gradio", "openai"}, base
    assert {"datasets", "evaluate", "numpy", "pandas"} <= base
    extras = {k: names(v) for k, v in cfg["options.extras_require"].items()}
    assert set(extras) == set(EXTRAS) | {"dev"}
    dist = {"open3d": "open3d-cpu", "lmms_eval": "lmms-eval"}
    for extra, packages in EXTRAS.items():
        assert {dist.get(p, p) for p in packages} <= extras[extra], extra
    make = (ROOT / "Makefile").read_text()
    listed = set(re.search(r"^EXTRAS := (\S+)$", make, flags=re.M).group(1).split(","))
    assert listed == set(extras) - {"lmms"}
    assert "-e '.[$(EXTRAS)]'" in make


def _train_install(site: Path) -> list[str]:
    """What ``pip install 'hf-real3d[train]'`` brings, taken from this environment: the
    distributions hf-real3d's base and [train] requirements name, and theirs, recursively
    (markers evaluated, with the extras each requirement asks for). Their files are linked
    into ``site``; returns their names. open3d and the other extras' packages are not among
    them, so a step that needs one fails there as it would after a real [train] install."""
    import configparser
    from importlib import metadata

    from packaging.requirements import Requirement

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    todo = [(Requirement(line.strip()), {""}) for key in ("install_requires", "train")
            for line in (cfg["options"] if key == "install_requires" else
                         cfg["options.extras_require"])[key].splitlines() if line.strip()]
    found: dict[str, metadata.Distribution] = {}
    seen = set()
    while todo:
        req, asked = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in asked):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency this platform does not install
        key = dist.metadata["Name"].lower().replace("_", "-")
        if (key, frozenset(req.extras)) in seen:
            continue
        seen.add((key, frozenset(req.extras)))
        found[key] = dist
        todo += [(Requirement(r), set(req.extras) | {""}) for r in dist.requires or []]
    site.mkdir(parents=True)
    for dist in found.values():
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            if Path(dist.locate_file(top)).exists() and not (site / top).exists():
                (site / top).symlink_to(dist.locate_file(top))
    return sorted(found)


@pytest.mark.slow
def test_the_wheel_runs_its_training_flow_outside_a_clone(tmp_path, base_wheel):
    """The wheel installed with [train] alone in a new virtual environment, used from a folder
    that is not a clone: ``hf-real3d synth`` writes and reads its ScanNet scenes without
    open3d, the recipes and their YAML configs come from the installed package, the README's
    Python quick start runs as written (on the small data/synth built there), and ``hf-real3d
    demo --help`` and ``hf-real3d train`` answer. The wheel goes in without its dependencies;
    the [train] install's distributions come from this environment (:func:`_train_install`,
    after the venv's own site-packages, so every hf_real3d module is the wheel's)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OFFLINE, HF_HOME=str(tmp_path / "hf_home"), OMP_NUM_THREADS="2",
               PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    pip = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(base_wheel)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True).stdout
    # a folder named as pip's (dill, which datasets hashes with, pickles modules from a
    # site-packages folder by reference)
    deps = tmp_path / "train_install" / "site-packages"
    names = _train_install(deps)
    assert {"torch", "trl", "plyfile", "datasets"} <= set(names), names
    assert not {"open3d-cpu", "open3d", "gradio", "openai"} & set(names), names
    (Path(site.strip()) / "zz_dependencies.pth").write_text(str(deps))
    work = tmp_path / "work"  # a user's folder: no recipes/, no clone above it
    work.mkdir()

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True,
                              timeout=900)

    # no open3d here; the scenes of data/synth are written and read all the same
    assert run(python, "-c", "import importlib.util as u; print(u.find_spec('open3d'))"
               ).stdout.strip() == "None"
    synth = run(str(venv / "bin" / "hf-real3d"), "synth", "--out", "data/synth",
                "--train-scenes", "3", "--val-scenes", "1", "--test-scenes", "1",
                "--questions-per-scene", "20")
    assert synth.returncode == 0, synth.stderr[-3000:]
    assert (work / "data/synth/scans/synth0004_00/synth0004_00_vh_clean_2.ply").is_file()
    # the flows and their configs are the installed package's, found without a clone
    where = run(python, "-c", "import hf_real3d.recipes as r, json; print(json.dumps([(m.__file__, "
                "str(getattr(m, 'CONFIG', m.__file__))) for m in map(r.load_recipe, r.RECIPES)]))")
    assert where.returncode == 0, where.stderr[-3000:]
    files = [Path(f) for pair in json.loads(where.stdout) for f in pair]
    assert len(files) == 10 and all(f.is_relative_to(venv) and f.is_file() for f in files)
    # the README's Python quick start, as written, beside the release it imports
    from light_install_script import write_release

    write_release(work / "release")
    imported = run(str(venv / "bin" / "hf-real3d"), "import-real3dqa", "--release",
                   str(work / "release"), "--out", "real3dqa")
    assert imported.returncode == 0, imported.stderr[-3000:]
    quick = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[0]
    (work / "quick.py").write_text(quick)
    ran = run(python, "quick.py")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "100.0" in ran.stdout.splitlines(), ran.stdout[-2000:]  # VRS of the gold answers
    assert "(the embedded default benchmark, found)" in ran.stderr
    assert (work / "out/quick/model.safetensors").is_file()
    assert (work / "out/quick/blind/model.safetensors").is_file()  # 3drft's stage 1
    # the console script: the demo's help, and a recipe's one-line error
    assert run(str(venv / "bin" / "hf-real3d"), "demo", "--help").returncode == 0
    bad = run(str(venv / "bin" / "hf-real3d"), "train", "3drft", "--reweighting", "nope")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr[-2000:]

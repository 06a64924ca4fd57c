import importlib.abc
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
# datasets caches local folders by folder + config name only: keep test runs apart
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="hf_real3d_ds_cache_")
# parsed Real-3DQA references: never the user's cache
os.environ["HF_REAL3D_CACHE"] = tempfile.mkdtemp(prefix="hf_real3d_ref_cache_")

ROOT = Path(__file__).resolve().parents[1]
# end-to-end tests marked `slow` run when RUN_SLOW is set (as in evaluate's test suite);
# `make test`, and so CI, sets it: everything runs there
RUN_SLOW = os.environ.get("RUN_SLOW", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the option
def pytest_cmdline_main(config):
    """Both cores by default: a run of the whole suite (`pytest`, `pytest -q`, no test named)
    spreads its test files over pytest-xdist workers, one per core (`-n auto`), each file's
    tests on one worker so that its module fixtures are built once. Naming files or tests
    (`pytest tests/test_x.py`), `-n N` or `-p no:xdist` chooses otherwise; `-n 0` runs in
    this process."""
    opt = config.option
    if (not hasattr(opt, "numprocesses") or opt.numprocesses is not None or opt.file_or_dir
            or opt.usepdb or opt.collectonly or os.environ.get("PYTEST_XDIST_WORKER")):
        return
    opt.numprocesses = "auto"
    if opt.dist == "no":
        opt.dist = "loadfile"


def pytest_collection_modifyitems(config, items):
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(reason="slow end-to-end test: set RUN_SLOW=1 (make test does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
SHARED_REAL = ROOT.parent / "shared" / "real"


_GUARD: list = []


class _OnImport(importlib.abc.MetaPathFinder):
    """Runs ``patch(module)`` right after ``name`` is first imported, so that the guard below
    costs nothing in a test that never imports it (transformers' trainer pulls in torch and
    accelerate: seconds)."""

    def __init__(self, name, patch):
        self.name, self.patch = name, patch

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the real finders locate it
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, self.patch

        class Patched(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                patch(module)

        spec.loader = Patched()
        return spec


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test that trains a model or starts a browser is marked `slow`, so that plain
    `pytest` stays a quick pass: in a test without the mark, `Trainer.train` (every
    trainer of the library and of trl) and Playwright's browser refuse to start, from the
    test's fixtures (module-scoped ones included) to its end. A module not imported yet is
    patched when it is."""
    if item.get_closest_marker("slow"):
        return

    def refuse(what):
        def start(*args, **kwargs):
            raise AssertionError(f"{item.nodeid} {what}: mark it @pytest.mark.slow")
        return start

    mp = pytest.MonkeyPatch()
    _GUARD.append(mp)
    for name, patch in (
            ("transformers.trainer",
             lambda m: mp.setattr(m.Trainer, "train", refuse("trains a model"))),
            ("playwright.sync_api",
             lambda m: mp.setattr(m, "sync_playwright", refuse("starts a browser")))):
        if name in sys.modules:
            patch(sys.modules[name])
        else:
            hook = _OnImport(name, patch)
            sys.meta_path.insert(0, hook)
            _GUARD.append(hook)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    while _GUARD:
        guard = _GUARD.pop()
        if isinstance(guard, _OnImport):
            if guard in sys.meta_path:
                sys.meta_path.remove(guard)
        else:
            guard.undo()


@pytest.fixture(scope="session")
def real_dir() -> Path:
    if not SHARED_REAL.is_dir():
        pytest.skip(f"real release files not found at {SHARED_REAL} (project machines only)")
    return SHARED_REAL


@pytest.fixture(scope="session")
def small_synth():
    """A tiny in-memory synthetic split (scenes + records)."""
    from hf_real3d.synth import SynthConfig, generate_split

    # no counter-prior questions here (tests/test_synth.py covers them): the same rooms
    # and questions as before they existed
    cfg = SynthConfig(seed=3, scenes={"train": 0, "val": 0, "test": 4},
                      questions_per_scene={"test": 60}, counter_prior_rate=0.0,
                      counter_prior_fraction=0.0)
    return generate_split(cfg, "test")


@pytest.fixture(scope="session")
def tiny_training():
    """Tiny synthetic data, tokenizer and scene bank for trainer tests."""
    from hf_real3d.modeling import SceneBank, qa_rows, train_tokenizer
    from hf_real3d.modeling.data import default_tokenizer_corpus
    from hf_real3d.synth import SynthConfig, generate_split

    cfg = SynthConfig(seed=4, scenes={"train": 3}, questions_per_scene={"train": 24})
    scenes, recs = generate_split(cfg, "train")
    tok = train_tokenizer(default_tokenizer_corpus(recs))
    bank = SceneBank.from_scenes(scenes, max_objects=8, points_per_object=4)
    return {"rows": qa_rows(recs), "tokenizer": tok, "bank": bank}




@pytest.fixture(scope="session")
def built_release(real_dir, tmp_path_factory):
    """The official release imported as a dataset folder, and perfect JSONL predictions of
    its rotations config, built once per session (a test that edits the folder edits a
    copy)."""
    # the datasets stack and the CLI load only for the tests that build the release
    import datasets

    from hf_real3d.cli import main as cli

    root = tmp_path_factory.mktemp("built")
    assert cli(["import-real3dqa", "--release", str(real_dir / "real3dqa"), "--out",
                str(root / "rel")]) == 0
    rot = datasets.load_dataset(str(root / "rel"), "rotations", split="test")
    preds = root / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": r["question_id"],
                                           "rotation_deg": r["rotation_deg"],
                                           "prediction": r["answers"][0]}) for r in rot))
    return root / "rel", preds


@pytest.fixture(scope="session")
def synth_folder(tmp_path_factory):
    """A small `hf-real3d synth` folder (3 training rooms, 1 val, 1 test, 20 questions each)."""
    # the CLI loads only for the tests that build it
    from hf_real3d.cli import main as cli

    out = tmp_path_factory.mktemp("recipes") / "synth"
    assert cli(["synth", "--out", str(out), "--train-scenes", "3", "--val-scenes", "1",
                "--test-scenes", "1", "--questions-per-scene", "20"]) == 0
    return out


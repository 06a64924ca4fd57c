import copy
import json
import os
import re
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


def pytest_collection_modifyitems(config, items):
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(reason="slow end-to-end test: set RUN_SLOW=1 (make test does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
SHARED_REAL = ROOT.parent / "shared" / "real"


_GUARD: list = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test that trains a model or starts a browser is marked `slow`, so that plain
    `pytest` stays a quick pass: in a test without the mark, `Trainer.train` (every
    trainer of the library and of trl) and Playwright's browser refuse to start, from the
    test's fixtures (module-scoped ones included) to its end."""
    if item.get_closest_marker("slow"):
        return

    def refuse(what):
        def start(*args, **kwargs):
            raise AssertionError(f"{item.nodeid} {what}: mark it @pytest.mark.slow")
        return start

    import transformers

    mp = pytest.MonkeyPatch()
    _GUARD.append(mp)
    mp.setattr(transformers.Trainer, "train", refuse("trains a model"))
    try:
        import playwright.sync_api
    except ImportError:  # pragma: no cover - the [app] extra is installed by make
        return
    mp.setattr(playwright.sync_api, "sync_playwright", refuse("starts a browser"))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    while _GUARD:
        _GUARD.pop().undo()


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


# the plain SceneLM the trainer tests use: object tokens from points and boxes only (not the
# question reader of SceneModelArguments' defaults), so their batches need no label inputs
PLAIN_3D = dict(object_labels=False, direction_words=False, color_words=False,
                question_reader=False, object_tokens=True)


def tiny_model(tokenizer, blind=False, seed=0):
    import torch
    from transformers import LlamaConfig

    from hf_real3d.modeling import SceneLM, SceneLMConfig

    torch.manual_seed(seed)
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=128, tie_word_embeddings=True)
    return SceneLM(SceneLMConfig(text_config=text, max_objects=8, points_per_object=4,
                                 encoder_hidden=16, blind=blind, **PLAIN_3D))


def build_synthetic_real3dqa(root: Path, *, seed: int, test_scenes: int, questions: int) -> Path:
    """A Real-3DQA folder built from synthetic test rooms (``root/r3``; the synthetic data in
    ``root/synth``): an oracle full model and a blind model that never answers, so nothing is
    filtered out and every question rotates from geometry where it can."""
    import json

    from hf_real3d.real3dqa import build_real3dqa
    from hf_real3d.sqa3d import read_split
    from hf_real3d.synth import SynthConfig, build_benchmark

    build_benchmark(root / "synth", SynthConfig(
        seed=seed, scenes={"train": 0, "val": 0, "test": test_scenes},
        questions_per_scene={"test": questions}), workers=1, progress=False)
    recs = read_split(root / "synth/sqa3d", "test")
    full, blind = root / "full.jsonl", root / "blind.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": r.question_id,
                                          "prediction": r.answers[0]}) for r in recs))
    blind.write_text("\n".join(json.dumps({"question_id": r.question_id, "prediction": "zzz"})
                               for r in recs))
    build_real3dqa(root / "synth/sqa3d", root / "synth/scans", root / "r3",
                   pairs=[("o", str(full), str(blind))], progress=False)
    return root / "r3"


def solid_png(color):
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (48, 48), color).save(buf, format="PNG")
    return buf.getvalue()


def three_question_srbench(folder, export_tsv=False):
    """A built 3DSRBench folder of three hand-made questions (plus the builder's
    complementary one, flips and circular shifts), in synthetic_common and _uncommon."""
    from hf_real3d.srbench import build_srbench

    rows = []
    for i, (q, opts, ans, cat, col) in enumerate([
            ("Is the lamp on the left side of the bed?", ["yes", "no"], "A",
             "orientation_on_the_left", "red"),
            ("Which object is higher in 3D world space, the lamp or the bed?", ["lamp", "bed"],
             "B", "height_higher", "blue"),
            ("Is the lamp above the bed?", ["no", "yes"], "B", "location_above", "green")]):
        qid = f"T000000{i}"  # the real benchmark's qid form
        rows.append({"index": i, "qid": qid, "question": q, "options": opts,
                     "answer": ans, "category": cat, "group": "x", "image_bytes": solid_png(col),
                     "image_source": "test", "image_url": "", "base_qid": qid,
                     "circular_group": qid, "flip_group": qid, "shift": 0,
                     "flipped": False, "pair_id": f"t{i}", "camera": "{}",
                     **{k: (opts[j] if j < len(opts) else "") for j, k in enumerate("ABCD")}})
    build_srbench(folder, synthetic={"synthetic_common": rows, "synthetic_uncommon": rows,
                                     "stats": {}}, export_tsv=export_tsv)
    return folder


def recipe_module(name: str):
    """``recipes/<name>.py`` imported as a module (once per session)."""
    import importlib.util
    import sys

    key = f"hf_real3d_recipe_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "recipes" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # before it runs: its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[key]


def run_recipe_here(name: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """A recipe run in this process as its ``__main__`` runs it: (exit code, stdout,
    stderr)."""
    from hf_real3d.training.pipeline import run_recipe

    mod = recipe_module(name)
    capsys.readouterr()
    try:
        run_recipe(mod.main, mod.parse, argv)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _nav_pages(nav) -> list[str]:
    out = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def doc_pages(section: str | None = None) -> list[Path]:
    """The documentation's pages in the site's order (mkdocs.yml's nav); ``section``: only
    that top-level section's (e.g. "How-to")."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    if section is not None:
        nav = next(e[section] for e in nav if isinstance(e, dict) and section in e)
    return [ROOT / "docs" / p for p in _nav_pages(nav)]


def documentation() -> str:
    """The README and every documentation page, in the site's order: where a test looks for
    what the documentation says."""
    return "\n".join(p.read_text() for p in [ROOT / "README.md", *doc_pages()])


# --- shared by the bad-input tests ---------------------------------------------------------


def perfect_predictions(refs):
    return refs[refs.rotation_deg == 0].assign(
        prediction=[a[0] for a in refs[refs.rotation_deg == 0].answers])[
        ["question_id", "rotation_deg", "prediction"]]


def mutate(data: dict, key: str, rng_pick) -> tuple[dict, tuple[str, ...]]:
    """A copy of ``data`` with one field of one item deleted (or one key inside a field);
    also the names an error about it must give (the field, or the field and its key)."""
    data = copy.deepcopy(data)
    items = data[key]
    item = items[rng_pick[0] % len(items)]
    path = sorted(item)
    field = path[rng_pick[1] % len(path)]
    if isinstance(item[field], dict) and item[field] and rng_pick[2] % 2:
        sub = sorted(item[field])
        gone = sub[rng_pick[2] % len(sub)]
        del item[field][gone]
        return data, (field, gone)
    del item[field]
    return data, (field,)


def assert_named(err: Exception, file_name: str, deleted: tuple[str, ...] | None) -> None:
    """A refused file's error names the file and where: the line or byte of a truncated
    file, the field of a deleted one."""
    msg = str(err)
    assert file_name in msg, msg
    if deleted is None:
        assert re.search(r"line \d+|byte \d+", msg), msg
    else:
        assert any(repr(name) in msg or f"{name} " in msg for name in deleted), (deleted, msg)


@pytest.fixture(scope="module")
def built_release(real_dir, tmp_path_factory):
    """The official release imported as a dataset folder, and perfect JSONL predictions of
    its rotations config."""
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


def one_line_error(capsys, *parts):
    """The error is one line, the last on stderr (progress bars of datasets may precede
    it), with no traceback."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error:" in line]
    assert len(errors) == 1 and err[-1] == errors[0] and "Traceback" not in "\n".join(err), err
    for p in parts:
        assert p in errors[0], (p, errors[0])
    return errors[0]


def srb_rows(tmp_path):
    from hf_real3d.srbench import expand

    base = {"index": 0, "question": "Is the lamp on the left of the bed?", "A": "yes", "B": "no",
            "C": "", "D": "", "answer": "A", "category": "orientation_on_the_left",
            "image": "", "image_source": "synthetic", "image_url": ""}
    rows = []
    for i in range(3):
        r = dict(base, qid=f"Q000000{i}", index=i)
        r.update({"options": ["yes", "no"], "group": "orientation", "base_qid": f"Q000000{i}",
                  "flipped": False, "shift": 0, "circular_group": f"Q000000{i}",
                  "flip_group": f"Q000000{i}"})
        rows.append(r)
    return expand(rows)


@pytest.fixture(scope="session")
def synth_folder(tmp_path_factory):
    """A small `hf-real3d synth` folder (3 training rooms, 1 val, 1 test, 20 questions each)."""
    # the CLI loads only for the tests that build it
    from hf_real3d.cli import main as cli

    out = tmp_path_factory.mktemp("recipes") / "synth"
    assert cli(["synth", "--out", str(out), "--train-scenes", "3", "--val-scenes", "1",
                "--test-scenes", "1", "--questions-per-scene", "20"]) == 0
    return out


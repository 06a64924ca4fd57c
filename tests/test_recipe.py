"""The recipes run as users run them: a dataset folder built by `hf-real3d synth`, then
accelerate launch with a YAML config and overrides, then predict.py on the same dataset."""

import dataclasses
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.recipes import recipe_module, run_recipe_here

from hf_real3d.training import ReweightedConfig
from hf_real3d.training.args import ScriptArguments, parse_recipe_args
from hf_real3d.training.recipe import (
    TRAINING_INFO,
    StaleModelError,
    blind_stage,
    load_training_data,
)

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--hidden_size", "32", "--num_layers", "1", "--logging_steps", "1"]


def test_synth_writes_a_loadable_dataset_folder(synth_folder):
    from hf_real3d.hub import load_local

    qs = {s: load_local(synth_folder, "sqa3d", s) for s in ("train", "val", "test")}
    assert {s: qs[s].num_rows for s in qs} == {"train": 60, "val": 20, "test": 20}
    assert json.loads(qs["train"][0]["semantics"])["kind"] == qs["train"][0]["kind"]
    row = load_local(synth_folder, "scenes", "train")[0]
    assert sum(o["num_points"] for o in row["objects"]) == len(row["points"])


@pytest.mark.slow
def test_3drft_recipe_from_dataset_name_under_accelerate_then_predict(synth_folder, tmp_path):
    env = dict(os.environ, HF_DATASETS_CACHE=str(tmp_path / "dsc"), OMP_NUM_THREADS="2")
    out = tmp_path / "3drft"
    accelerate = str(Path(sys.executable).parent / "accelerate")
    cmd = [accelerate, "launch", "--num_processes", "1", "--cpu", "--mixed_precision", "no",
           "--dynamo_backend", "no", str(ROOT / "recipes/3drft.py"),
           "--config", str(ROOT / "recipes/configs/3drft_synth.yaml"),
           "--dataset_name", str(synth_folder), "--output_dir", str(out),
           "--max_steps", "3", *TINY]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "stage 1/2 (blind model): training into" in p.stderr
    for folder in (out / "blind", out):  # stage 1 trained the blind model first
        assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model_type"] == "scene_lm" and cfg["blind"] is False
    assert json.loads((out / "blind/config.json").read_text())["blind"] is True
    info = json.loads((out / TRAINING_INFO).read_text())
    assert info["training"]["reweighting"] == "paper" and info["metrics"]["global_step"] == 3
    assert info["blind_model"]["path"] == str(out / "blind")
    card = (out / "README.md").read_text()
    for words in ("library_name: hf_real3d", "## Base", "## Data", "3DR-FT, paper variant",
                  info["data"]["fingerprint"], "## Metrics", "train_loss"):
        assert words in card, words
    # a second run with other settings does not reuse the now stale blind model silently
    p = subprocess.run([*cmd[:-len(TINY) - 2], "--max_steps", "4", *TINY], capture_output=True,
                       text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "is stale (training.max_steps: saved 3, asked 4); retraining" in p.stderr
    assert json.loads((out / "blind" / TRAINING_INFO).read_text())["metrics"][
        "global_step"] == 4
    p = subprocess.run([sys.executable, str(ROOT / "recipes/predict.py"), "--model", str(out),
                        "--dataset_name", str(synth_folder), "--out", str(tmp_path / "preds"),
                        "--ablations", "no_3d", "--attention"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    rows = [json.loads(x) for x in (tmp_path / "preds/rotations.jsonl").read_text().splitlines()]
    assert {r["rotation_deg"] for r in rows} == {0, 90, 180, 270}
    summary = json.loads((tmp_path / "preds/summary.json").read_text())
    assert 0 <= summary["attention_to_3d"]["mean"] <= 1
    orig = (tmp_path / "preds/original.jsonl").read_text().splitlines()
    assert len(orig) == 20 and "log_prob" in json.loads(orig[0])
    assert (tmp_path / "preds/ablation_no_3d.jsonl").is_file()


def _signature_args(synth_folder, tmp_path, **kw):
    s = ScriptArguments(dataset_name=str(synth_folder), hidden_size=16, num_layers=1,
                        blind_model_path=str(tmp_path / "blind"))
    t = ReweightedConfig(output_dir=str(tmp_path / "run"), reweighting="paper", max_steps=1,
                         per_device_train_batch_size=8, use_cpu=True, report_to="none",
                         save_strategy="no", disable_tqdm=True, **kw)
    return s, t


@pytest.mark.slow
def test_named_stale_blind_model_is_an_error(synth_folder, tmp_path):
    s, t = _signature_args(synth_folder, tmp_path)
    data = load_training_data(s)
    stage = blind_stage(s, t, data)  # absent before: to be trained, as blind_ft.py trains
    assert stage.train and stage.training_args.output_dir == str(tmp_path / "blind")
    assert stage.script_args.blind and stage.training_args.reweighting == "none"
    recipe_module("blind_ft").main(stage.script_args, stage.training_args, data=data)
    assert not blind_stage(s, t, data).train  # reused: same signature
    _, other_lr = _signature_args(synth_folder, tmp_path, learning_rate=1e-3)
    with pytest.raises(StaleModelError, match=r"training\.learning_rate: saved 5e-05, asked "
                                              r"0\.001.*check_blind_model false"):
        blind_stage(s, other_lr, data)
    # named with check_blind_model false: used as it is (the demo's fine-tuning arms)
    as_is = blind_stage(dataclasses.replace(s, check_blind_model=False), other_lr, data)
    assert not as_is.train and as_is.training_args.output_dir == str(tmp_path / "blind")
    fewer = dict(s.__dict__, max_train_questions=30)
    with pytest.raises(StaleModelError, match=r"data\.fingerprint"):
        blind_stage(ScriptArguments(**fewer), t, load_training_data(ScriptArguments(**fewer)))


def test_blind_stage_of_a_run_with_weights_carrying_gradient(synth_folder, tmp_path):
    """3DR-FT with weight_grad (paper only): its blind model trains without reweighting, so
    without weight_grad (it used to be refused building the blind stage's arguments)."""
    s, t = _signature_args(synth_folder, tmp_path, weight_grad=True)
    stage = blind_stage(s, t, load_training_data(s))
    assert stage.train and stage.training_args.reweighting == "none"
    assert stage.training_args.weight_grad is False and t.weight_grad is True


def test_load_recipe_imports_the_packaged_flows():
    """A recipe by name is a module of hf_real3d.recipes (inside the package, as trl keeps
    trl/scripts/), with its YAML config beside it in the package; an unknown name is one
    line naming the nearest."""
    from hf_real3d.errors import InputError
    from hf_real3d.recipes import RECIPES, load_recipe, threedrft

    assert load_recipe("3drft") is threedrft and callable(threedrft.main)
    pkg = ROOT / "hf_real3d" / "recipes"
    for name in RECIPES:
        mod = load_recipe(name)
        assert Path(mod.__file__).parent == pkg and callable(mod.main) and callable(mod.parse)
        config = getattr(mod, "CONFIG", None)
        assert config is None or Path(config).parent == pkg / "configs" and config.is_file()
    with pytest.raises(InputError, match=r"unknown recipe '3dfrt'; did you mean '3drft'\?"):
        load_recipe("3dfrt")


def test_recipe_config_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("no_such_option: 3\n")
    with pytest.raises(ValueError, match=r"unknown argument 'no_such_option'"):
        parse_recipe_args(["--config", str(bad)])
    bad.write_text("learning_rat: 0.1\n")
    with pytest.raises(ValueError, match=r"did you mean 'learning_rate'\?"):
        parse_recipe_args(["--config", str(bad)])
    for line, want in (("per_device_train_batch_size: 6.5", "expected int but got 6.5"),
                       ("learning_rate: [0.1]", r"expected float but got \[0.1\]"),
                       ("use_cpu: 'yes'", "expected bool but got 'yes'"),
                       ("dataset_name: 3", "expected str but got 3")):
        bad.write_text(line + "\n")
        with pytest.raises(TypeError, match=want):
            parse_recipe_args(["--config", str(bad)])
    good = tmp_path / "good.yaml"
    good.write_text("output_dir: x\nlearning_rate: 0.1\nreweighting: official\n"
                    "dataset_name: somewhere\n")
    s, t = parse_recipe_args(["--config", str(good), "--learning_rate", "0.5"])
    assert t.learning_rate == 0.5 and t.reweighting == "official" and t.output_dir == "x"
    assert s.dataset_name == "somewhere"


def test_recipe_missing_dataset_is_one_line_error(tmp_path, capsys):
    code, _, err = run_recipe_here("sft", ["--dataset_name", str(tmp_path / "nowhere"),
                                           "--output_dir", str(tmp_path / "o"), "--use_cpu",
                                           "true", "--report_to", "none"], capsys)
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    assert "hf-real3d synth --out" in err.strip().splitlines()[-1]


def test_recipe_missing_hub_style_name_is_one_line_error(tmp_path, capsys, monkeypatch):
    """An `org/name` that is neither a folder here nor reachable offline: one line naming it
    (it used to end in a ConnectionError traceback blaming the Hub)."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_recipe_here("3drft", ["--dataset_name", "someorg/missing",
                                             "--max_steps", "2", "--report_to", "none"], capsys)
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "'someorg/missing'" in last and "offline" in last


@pytest.mark.slow
def test_design_card_command_with_no_arguments_builds_the_default(tmp_path):
    """`accelerate launch recipes/3drft.py` on a fresh checkout: the default data/synth is
    built (one log line says so), both stages train, and the next recipe run finds it."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_DATASETS_CACHE=str(tmp_path / "cache"))
    cmd = [str(Path(sys.executable).parent / "accelerate"), "launch", "--num_processes", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", str(ROOT / "recipes/3drft.py"),
           "--max_steps", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "data/synth not found: building the embedded default benchmark" in p.stderr
    assert (tmp_path / "data/synth/README.md").is_file()
    # without arguments: recipes/configs/3drft_synth.yaml's settings and output folder
    assert not (tmp_path / "trainer_output").exists()
    info = json.loads((tmp_path / "outputs/recipes/3drft" / TRAINING_INFO).read_text())
    assert info["training"]["reweighting"] == "paper" and info["metrics"]["global_step"] == 2
    assert info["training"]["learning_rate"] == 1e-3
    assert info["training"]["per_device_train_batch_size"] == 16
    # the next run (another recipe with the same default) finds it
    again = [*cmd[:cmd.index(str(ROOT / "recipes/3drft.py"))], str(ROOT / "recipes/sft.py"),
             "--max_steps", "1", "--output_dir", "again"]
    p = subprocess.run(again, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env=env)
    assert p.returncode == 0 and "(the embedded default benchmark, found)" in p.stderr
    assert "not found: building" not in p.stderr


@pytest.mark.parametrize("recipe,flags,named", [
    ("sft", ["--reweighting", "paper"], "--reweighting"),
    ("blind_ft", ["--reweighting", "official"], "--reweighting"),
    ("blind_ft", ["--blind", "false"], "--blind"),
])
def test_recipes_refuse_a_setting_they_would_overwrite(tmp_path, recipe, flags, named,
                                                      capsys):
    """sft.py and blind_ft.py stand for fixed settings: a `--reweighting` (or `--blind`)
    they cannot honour is an error naming it and the recipe that takes it, not silently
    replaced (the model card would say one thing and the training do another)."""
    code, _, err = run_recipe_here(recipe, [*flags, "--output_dir", str(tmp_path / "o")],
                                   capsys)
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert named in last and "; use the " in last and "Traceback" not in err, last
    assert not (tmp_path / "o").exists()
    # the same value in a YAML file names the file
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"{named[2:]}: {flags[1]}\noutput_dir: {tmp_path / 'o'}\n")
    code, _, err = run_recipe_here(recipe, ["--config", str(cfg)], capsys)
    assert code == 2 and str(cfg) in err.strip().splitlines()[-1], err


def test_recipes_accept_their_own_fixed_values():
    blind_ft, sft = recipe_module("blind_ft"), recipe_module("sft")
    _, t = sft.parse(["--reweighting", "none", "--output_dir", "x"])
    assert t.reweighting == "none"
    s, t = blind_ft.parse(["--output_dir", "x"])
    assert s.blind is True and t.reweighting == "none"  # their defaults, not the trainer's


def test_one_set_of_scenelm_defaults():
    """SceneLMConfig, the recipes' ScriptArguments and the demo's DemoConfig take SceneLM's
    settings from one dataclass, with one set of defaults."""
    from hf_real3d.demo import DemoConfig
    from hf_real3d.modeling import SceneLMConfig
    from hf_real3d.modeling.settings import DEFAULTS, SceneModelArguments

    want = DEFAULTS.settings()
    assert ScriptArguments().settings() == want == DemoConfig().settings()
    assert issubclass(ScriptArguments, SceneModelArguments)
    assert issubclass(DemoConfig, SceneModelArguments)
    cfg = SceneLMConfig()
    for k in ("max_objects", "points_per_object", "object_labels", "direction_features",
              "direction_words", "question_reader", "color_words", "object_tokens"):
        assert getattr(cfg, k) == want[k], k
    assert cfg.text_config.hidden_size == want["hidden_size"]
    assert cfg.text_config.num_hidden_layers == want["num_layers"]


@pytest.mark.slow
@pytest.mark.parametrize("recipe,flags", [("sft", []), ("blind_ft", []),
                                          ("3drft", ["--reweighting", "paper"]),
                                          ("3drft", ["--reweighting", "official"])])
def test_each_recipe_trains_what_the_demo_trains(synth_folder, tmp_path, recipe, flags):
    """The recipes spell out data, (the blind stage,) model, trainer, train, save; the demo
    trains through their main, a job of its pool with the data loaded once beforehand. The
    two give the same weights (both stages), signature and card wording."""
    import torch
    from safetensors.torch import load_file

    from hf_real3d._io import umask
    from hf_real3d.demo.pool import TrainingJob, TrainingPool, one_thread

    mod = recipe_module(recipe)
    outs = {}
    for how in ("recipe", "demo"):
        out = tmp_path / how
        script_args, training_args = mod.parse(
            ["--dataset_name", str(synth_folder), "--output_dir", str(out), "--max_steps", "2",
             "--report_to", "none", "--max_train_questions", "16", *flags, *TINY])
        if how == "recipe":  # as a user runs it: main loads its data (on the demo's one
            with one_thread():  # thread, so that both run the same kernels)
                mod.main(script_args, training_args)
        else:
            data = load_training_data(script_args)
            with TrainingPool(1) as pool:
                pool.train([TrainingJob("demo", recipe, script_args, training_args)], data,
                           script_args)
        outs[how] = out
    folders = [""] + (["blind"] if "paper" in flags else [])
    for sub in folders:
        a, b = (load_file(outs[h] / sub / "model.safetensors") for h in ("recipe", "demo"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), sub
        # readable as open() would have made it (safetensors writes 0600 whatever the umask)
        mode = stat.S_IMODE((outs["recipe"] / sub / "model.safetensors").stat().st_mode)
        assert mode == 0o666 & ~umask(), oct(mode)
    info = [json.loads((outs[h] / TRAINING_INFO).read_text()) for h in outs]
    assert info[0]["data"] == info[1]["data"] and info[0]["model"] == info[1]["model"]
    assert info[0]["training"] == info[1]["training"]
    cards = [(outs[h] / "README.md").read_text() for h in outs]
    wording = [line for line in cards[1].splitlines() if line.startswith("- ") and "(" in line]
    assert wording and wording[0] in cards[0]
    # the weights it started from (the same seed) differ from those saved: it trained
    from transformers import set_seed

    from hf_real3d.training.recipe import build_model

    set_seed(training_args.seed)
    start = build_model(script_args, data.tokenizer, blind=recipe == "blind_ft").state_dict()
    end = load_file(outs["demo"] / "model.safetensors")
    assert any(not torch.equal(start[k], end[k]) for k in end if k in start)


def test_rotation_refusals_are_one_line_from_the_recipe(synth_folder, tmp_path, capsys):
    """The refusals a user's rotation options meet inside a recipe's main end the run with
    one line on stderr and exit code 2, no traceback (issue 49)."""
    from hf_real3d.hub import load_local
    from hf_real3d.training.augment import rotation_augment
    from hf_real3d.training.pipeline import run_recipe

    sft = recipe_module("sft")
    train = load_local(synth_folder, "sqa3d", "train")
    aug = rotation_augment(train, load_local(synth_folder, "scenes", "train"))
    short = tmp_path / "short"
    short.mkdir()
    for k in (0, 90, 180, 270):
        rows = [r for r in aug if r["rotation_deg"] == k]
        if k == 180:
            rows = rows[1:]  # one question loses its 180-degree viewpoint
        (short / f"rotation_{k}.json").write_text(json.dumps({"questions": [
            {"question_id": r["question_id"], "scene_id": r["scene_id"],
             "situation": r["situation"], "alternative_situation": [],
             "question": r["question"], "answers": [{"answer": a, "answer_confidence": "yes",
                                                     "answer_id": 1} for a in r["answers"]],
             "position": r["position"], "rotation": r["rotation"]} for r in rows]}))
    base = ["--dataset_name", str(synth_folder), "--max_steps", "1", "--report_to", "none",
            *TINY]
    cases = {
        "incomplete rotation set": (["--rotation_augment", "all", "--rotation_set", str(short)],
                                    "lack"),
        "unknown kind": (["--rotation_augment", "all", "--rotation_kinds", "nope"],
                         "no question of kind"),
        "viewpoint_dro without groups": (["--reweighting", "viewpoint_dro"], "viewpoint"),
    }
    for name, (extra, said) in cases.items():
        argv = [*base, "--output_dir", str(tmp_path / name.replace(" ", "_")), *extra]
        with pytest.raises(SystemExit) as exit_:
            run_recipe(sft.main, sft.parse, argv=argv)
        err = capsys.readouterr().err  # progress bars aside, one line says what is wrong
        errors = [x for x in err.splitlines() if "error:" in x]
        assert exit_.value.code == 2, name
        assert len(errors) == 1 and "Traceback" not in err and said in errors[0], (name, err)

"""Bad input, round 7, the training recipes and `hf-real3d predict` (issue 63, classes 1 and
2), tried through the command line as a new user would: each mistake is one line naming the
option, file or value and the fix, exit code 2, before any training step (the quick pass
refuses `Trainer.train`, so a case that reached it would fail here), with nothing written
and the inputs untouched; the acceptable variants keep working."""

import hashlib
import json
import os
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.models import tiny_model

CONFIGS = Path(__file__).resolve().parents[1] / "recipes" / "configs"
TINY = ["--hidden_size", "16", "--num_layers", "1", "--max_steps", "1", "--report_to", "none"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Saved model folders of several kinds, built from configs: a SceneLM with its tokenizer,
    the same without its tokenizer, a causal LM, a LLaVA with its processor, a config without
    weights, and a plain file."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from hf_real3d.modeling import train_tokenizer
    from hf_real3d.training.vlm_recipe import small_llava

    root = tmp_path_factory.mktemp("models")
    tok = train_tokenizer(["what is on my left right front behind the table chair door"])
    tiny_model(tok).save_pretrained(root / "scene_lm")
    tok.save_pretrained(root / "scene_lm")
    tiny_model(tok).save_pretrained(root / "no_tokenizer")
    LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                                 num_hidden_layers=1, num_attention_heads=2,
                                 num_key_value_heads=2)).save_pretrained(root / "llama")
    model, proc = small_llava(["a b c"], hidden=16, layers=1, image_size=32)
    model.save_pretrained(root / "llava")
    proc.save_pretrained(root / "llava")
    (root / "config_only").mkdir()
    (root / "config_only/config.json").write_text((root / "scene_lm/config.json").read_text())
    (root / "a_file").write_text("not a model")
    return root


def _digest(*roots: Path) -> dict[str, str]:
    """Every file under ``roots`` -> its content hash (inputs untouched, nothing new)."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for r in roots for p in sorted(Path(r).rglob("*")) if p.is_file()}


def _refused(args, said, tmp_path, *inputs):
    """``hf-real3d *args`` run in ``tmp_path``: exit code 2, one error line holding every
    part of ``said``, no traceback, nothing written there, ``inputs`` untouched."""
    before = _digest(tmp_path, *inputs)
    p = run_cli(*args, cwd=tmp_path)
    errors = [x for x in p.stderr.splitlines() if "error:" in x]
    assert p.returncode == 2 and len(errors) == 1, (args, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and p.stderr.strip().splitlines()[-1] == errors[0]
    for part in said:
        assert part in errors[0], (part, errors[0])
    assert _digest(tmp_path, *inputs) == before, args
    return errors[0]


def test_recipe_configs_and_flags(synth_folder, tmp_path):
    """Unknown recipes, another recipe's config, keys and flags set twice, a second
    --config, values of another type: one line each, before anything is read."""
    sft = ["train", "sft", "--dataset_name", synth_folder, "--output_dir", "o", *TINY]
    (tmp_path / "twice.yaml").write_text("seed: 1\nlearning_rate: 0.01\nseed: 2\n")
    (tmp_path / "env.yaml").write_text("env: [A]\n")
    (tmp_path / "sft_copy.yaml").write_text((CONFIGS / "sft_synth.yaml").read_text())
    cases = [
        (["train", "sfft"], ["unknown recipe 'sfft' (did you mean 'sft'?)"]),
        (["train", "sft", "--config", CONFIGS / "3drft_synth.yaml"],
         ["reweighting='paper'", "use the 3drft recipe"]),
        (["train", "sft", "--config", CONFIGS / "blind_ft_synth.yaml"],
         ["blind=True", "use the blind_ft recipe"]),
        (["train", "3drft", "--config", CONFIGS / "3drft_vlm.yaml"],
         ["'image_size' is a setting of the 3drft_vlm recipe", "another recipe's config"]),
        (["train", "3drft_vlm", "--config", CONFIGS / "sft_synth.yaml"],
         ["sft_synth.yaml is another recipe's packaged config", "reads 3drft_vlm.yaml"]),
        (["train", "blind_ft", "--config", "sft_copy.yaml"],
         ["output_dir outputs/recipes/sft", "where another recipe's config (sft_synth.yaml)"]),
        (["train", "sft", "--config", "twice.yaml"],
         ["twice.yaml: line 3: key 'seed' is set twice (first at line 1)"]),
        (["train", "sft", "--config", "env.yaml"], ["env.yaml: env: expected a mapping"]),
        ([*sft, "--config", CONFIGS / "sft_synth.yaml", "--config", "twice.yaml"],
         ["--config given 2 times", "a recipe reads one YAML file"]),
        (["train", "sft", "--config"], ["--config needs a YAML file"]),
        ([*sft, "--seed", "1", "--seed=2"], ["--seed is given twice"]),
        ([*sft, "--logging_steps", "abc"], ["--logging_steps", "invalid float value: 'abc'"]),
        ([*sft, "--loging_steps", "3"], ["'--loging_steps'", "did you mean --logging_steps?"]),
        (["train", "sft", "--config", "none.yaml"], ["none.yaml: no such file"]),
    ]
    for args, said in cases:
        _refused(args, said, tmp_path, synth_folder)


def test_recipe_counts_of_zero(synth_folder, tmp_path):
    """A zero that would train nothing, by epochs when steps were asked for, or reach a
    division, is refused naming the flag."""
    sft = ["train", "sft", "--dataset_name", synth_folder, "--output_dir", "o", "--report_to",
           "none"]
    for flag, value, want in (
            ("--max_steps", "0", "or -1 to train for --num_train_epochs"),
            ("--per_device_train_batch_size", "0", "expected at least 1"),
            ("--gradient_accumulation_steps", "0", "expected at least 1"),
            ("--hidden_size", "0", "expected at least 1"),
            ("--num_layers", "0", "expected at least 1"),
            ("--max_objects", "0", "expected at least 1"),
            ("--max_length", "0", "expected at least 2"),
            ("--max_train_questions", "0", "expected at least 1"),
            ("--dataset_num_proc", "0", "expected at least 1"),
            ("--learning_rate", "0", "expected more than 0"),
            ("--weight_clip", "0", "expected more than 0 (or None")):
        _refused([*sft, flag, value], [f"{flag} {value}", want], tmp_path, synth_folder)
    _refused([*sft, "--max_steps", "-1", "--num_train_epochs", "0"],
             ["--num_train_epochs 0.0: expected more than 0"], tmp_path, synth_folder)
    _refused(["train", "3drft_vlm", "--dataset_name", synth_folder, "--image_size", "0"],
             ["--image_size 0: expected at least 8"], tmp_path, synth_folder)


@pytest.mark.slow
def test_recipe_folders_models_and_outputs(synth_folder, models, tmp_path, real_dir):
    """Datasets that are absent or another benchmark's, models of another format or
    architecture (transformers would train them from fresh weights), tokenizers and
    checkpoints that are not there, an output_dir that is an input or a file."""
    sft = ["train", "sft", "--dataset_name", synth_folder, *TINY]
    out = ["--output_dir", "o"]
    m = models
    (tmp_path / "a_file").write_text("x")
    cases = [
        (["train", "sft", "--dataset_name", "nowhere", *out, *TINY],
         ["nowhere: no such file or folder", "hf-real3d synth --out nowhere"]),
        (["train", "sft", "--dataset_name", real_dir / "real3dqa", *out, *TINY],
         ["the Real-3DQA release folder", "hf-real3d synth --out"]),
        (["train", "sft", "--dataset_name", synth_folder / "sqa3d", *out, *TINY],
         ["an SQA3D folder"]),
        ([*sft, *out, "--dataset_config", "views"], ["no 'views' config (it holds sqa3d, "]),
        ([*sft, *out, "--model_name_or_path", m / "llama"],
         ["--model_name_or_path", "holds a causal language model", "not a SceneLM"]),
        ([*sft, *out, "--model_name_or_path", m / "llava"], ["holds a vision-language model"]),
        ([*sft, *out, "--model_name_or_path", m / "config_only"], ["no weights"]),
        ([*sft, *out, "--model_name_or_path", m / "nowhere"], ["no such folder"]),
        ([*sft, *out, "--model_name_or_path", synth_folder], ["no config.json"]),
        ([*sft, *out, "--model_name_or_path", m / "a_file"], ["a file"]),
        ([*sft, *out, "--lm_path", m / "scene_lm"], ["--lm_path", "holds a SceneLM",
                                                     "not a causal language model"]),
        ([*sft, *out, "--lm_path", m / "llava"], ["not a causal language model"]),
        ([*sft, *out, "--tokenizer_path", m / "llama"], ["--tokenizer_path", "no tokenizer"]),
        ([*sft, *out, "--resume_from_checkpoint", "nowhere"], ["not a checkpoint folder"]),
        (["train", "3drft", "--dataset_name", synth_folder, *TINY, *out, "--blind_model_path",
          m / "llama"], ["--blind_model_path", "not a SceneLM"]),
        (["train", "3drft", "--dataset_name", synth_folder, *TINY, *out, "--blind_model_path",
          synth_folder], ["neither a saved model nor a new folder"]),
        (["train", "3drft", "--dataset_name", synth_folder, *TINY, "--output_dir",
          m / "scene_lm", "--blind_model_path", m / "scene_lm"], ["is --blind_model_path"]),
        (["train", "3drft_vlm", "--dataset_name", synth_folder, *out, "--model_name_or_path",
          m / "scene_lm"], ["holds a SceneLM", "not a vision-language model"]),
        (["train", "3drft_vlm", "--dataset_name", synth_folder, *out, "--reweighting",
          "paper"], ["needs --blind_model_path"]),
        ([*sft, "--output_dir", synth_folder], ["is the input --dataset_name"]),
        ([*sft, "--output_dir", synth_folder / "model"], ["lies inside the input"]),
        ([*sft, "--output_dir", synth_folder.parent], ["holds the input --dataset_name"]),
        ([*sft, "--output_dir", m / "scene_lm", "--model_name_or_path", m / "scene_lm"],
         ["is the input --model_name_or_path"]),
        ([*sft, "--output_dir", "a_file"], ["--output_dir a_file: a file"]),
    ]
    for args, said in cases:
        _refused(args, said, tmp_path, synth_folder, m)


def test_predict_refusals_and_a_whole_folder(synth_folder, models, tmp_path):
    """`hf-real3d predict`: model folders missing their weights or tokenizer or holding
    another model, batch sizes and viewpoints out of range, unknown ablations, an --out that
    is an input: one line, nothing written. A good run writes its folder whole."""
    base = ["predict", "--dataset_name", synth_folder, "--out", "preds"]
    m = models
    cases = [
        (["--model", m / "llama"], ["--model", "holds a causal language model"]),
        (["--model", m / "llava"], ["holds a vision-language model"]),
        (["--model", m / "no_tokenizer"], ["no tokenizer (tokenizer.json)"]),
        (["--model", m / "config_only"], ["no weights"]),
        (["--model", m / "nowhere"], ["no such folder"]),
        (["--model", m / "scene_lm", "--batch_size", "0"], ["--batch_size 0"]),
        (["--model", m / "scene_lm", "--batch_size", "-1"], ["--batch_size -1"]),
        (["--model", m / "scene_lm", "--viewpoints", "-1"], ["--viewpoints -1"]),
        (["--model", m / "scene_lm", "--ablations", "no3d"], ["--ablations 'no3d'", "no_3d"]),
        (["--model", m / "scene_lm", "--split", "nope"], ["Unknown split"]),
        (["--model", m / "scene_lm", "--batch_size", "many"], ["invalid int value: 'many'"]),
        (["--model", m / "scene_lm", "--batchsize", "8"], ["did you mean --batch_size?"]),
        (["--model", m / "scene_lm", "--viewpoints", "3"], ["--viewpoints 3: none of the"]),
    ]
    for args, said in cases:
        _refused([*base, *args], said, tmp_path, synth_folder, m)
    _refused(["predict", "--dataset_name", synth_folder, "--model", m / "scene_lm", "--out",
              m / "scene_lm"], ["--out", "is the input --model"], tmp_path, synth_folder, m)
    _refused(["predict", "--dataset_name", synth_folder, "--model", m / "scene_lm", "--out",
              synth_folder / "preds"], ["lies inside the input --dataset_name"], tmp_path,
             synth_folder, m)
    # acceptable: a good run, its folder whole (and `--config` reads predict's options too)
    (tmp_path / "p.yaml").write_text(f"model: {m / 'scene_lm'}\nviewpoints: 1\n")
    p = run_cli("predict", "--config", "p.yaml", "--dataset_name", synth_folder, "--out",
                "preds", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(x.name for x in (tmp_path / "preds").iterdir()) == ["original.jsonl",
                                                                      "summary.json"]
    rows = (tmp_path / "preds/original.jsonl").read_text().splitlines()
    assert len(rows) == 20 and json.loads(p.stdout)["files"]["original"].endswith(
        "original.jsonl")


def test_acceptable_recipe_variants(synth_folder, models, tmp_path, monkeypatch):
    """trl's `env:` form is set as trl sets it; --config=FILE is one --config; a flag still
    overrides the file; the recipes' own YAML keys stay exact; a fine-tuned SceneLM takes its
    own folder's tokenizer."""
    from helpers.recipes import recipe_module

    from hf_real3d.training.args import ScriptArguments
    from hf_real3d.training.recipe import load_training_data

    monkeypatch.delenv("HF_REAL3D_TEST_ENV", raising=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("env:\n  HF_REAL3D_TEST_ENV: 7\nlearning_rate: 0.01\nseed: 3\n")
    s, t = recipe_module("sft").parse([f"--config={cfg}", "--seed", "5", "--output_dir", "o"])
    assert os.environ["HF_REAL3D_TEST_ENV"] == "7"
    assert t.learning_rate == 0.01 and t.seed == 5 and s.dataset_name == "data/synth"
    s, t = recipe_module("3drft_vlm").parse(["--config", str(cfg), "--output_dir", "o"])
    assert t.reweighting == "official" and t.learning_rate == 0.01  # its own config, then c
    args = ScriptArguments(dataset_name=str(synth_folder), model_name_or_path=str(
        models / "scene_lm"), max_train_questions=4)
    data = load_training_data(args)
    from transformers import AutoTokenizer

    own = AutoTokenizer.from_pretrained(models / "scene_lm")
    assert data.tokenizer.get_vocab() == own.get_vocab()

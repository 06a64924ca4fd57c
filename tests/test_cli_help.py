"""Every command's and every recipe's `--help` renders, with the defaults shown (issue 39:
a `%` in a help text broke the recipes' `--help`)."""

from pathlib import Path

import pytest
from helpers.recipes import recipe_module, run_recipe_here

from hf_real3d.cli import COMMANDS, main
from hf_real3d.recipes import RECIPES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help_shows_defaults(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: hf-real3d {name}")
    opts = COMMANDS[name].options()
    import dataclasses

    with_default = [f for f in dataclasses.fields(opts) if f.default is not dataclasses.MISSING
                    and f.default is not None and f.default is not False]
    if with_default:
        assert "(default: " in out, name
    bare = "".join(out.split())  # help is wrapped, also inside a value
    for f in with_default:
        assert "(default:" + "".join(str(f.default).split()) + ")" in bare, (name, f.name)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_recipe_help_shows_the_measured_defaults(recipe, capsys):
    code, out, err = run_recipe_here(recipe, ["--help"], capsys)
    assert code == 0, err[-2000:]
    flat = " ".join(out.split())
    assert "(default:" in flat
    if recipe != "predict":  # the training recipes: their YAML config's settings
        assert "The initial learning rate for the optimizer. (default: 0.001)" in flat
        assert "(default: outputs/recipes/" in flat and "trainer_output" not in flat


def test_each_launcher_is_a_packaged_recipe(capsys):
    """Every recipes/*.py of a clone is a few lines launching a packaged recipe (`hf-real3d
    train NAME`, or `hf-real3d predict`), whose `--help` the command line shows."""
    launchers = sorted(p.stem for p in (ROOT / "recipes").glob("*.py"))
    assert launchers == sorted(RECIPES)
    for name in launchers:
        argv = ["predict"] if name == "predict" else ["train", name]
        text = (ROOT / "recipes" / f"{name}.py").read_text()
        assert "main([" + ", ".join(f'"{a}"' for a in argv) + ", *sys.argv[1:]])" in text, name
        assert len(text.splitlines()) <= 15, name  # a launcher, not a flow
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--help"])
        out = capsys.readouterr().out
        assert exit_.value.code == 0 and ("--output_dir" in out or "--model" in out), name
    # `hf-real3d train` alone lists the recipes; an unknown one is one line naming them
    with pytest.raises(SystemExit) as exit_:
        main(["train"])
    assert exit_.value.code == 2 and "RECIPE: one of sft, blind_ft" in capsys.readouterr().out
    assert main(["train", "predict"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("hf-real3d train: error: unknown recipe 'predict'; one of ['sft', "
                   "'blind_ft', '3drft', '3drft_vlm'] (predictions: hf-real3d predict)"), err


def test_recipes_without_arguments_take_their_configs_settings():
    """The settings a recipe trains with when given nothing: its YAML config's."""
    import yaml

    for recipe, config in (("sft", "sft_synth.yaml"), ("blind_ft", "blind_ft_synth.yaml"),
                           ("3drft", "3drft_synth.yaml"), ("3drft_vlm", "3drft_vlm.yaml")):
        mod = recipe_module(recipe)
        script, train = mod.parse([])
        want = yaml.safe_load((ROOT / "recipes/configs" / config).read_text())
        assert train.learning_rate == want["learning_rate"] == 1e-3, recipe
        assert train.per_device_train_batch_size == want["per_device_train_batch_size"] == 16
        assert train.output_dir == want["output_dir"] and script.dataset_name == "data/synth"
        # a flag still wins
        assert mod.parse(["--learning_rate", "0.01"])[1].learning_rate == 0.01

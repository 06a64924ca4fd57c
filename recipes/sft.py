"""Supervised fine-tuning of SceneLM (full model: text + 3D) on a built dataset.

    hf-real3d synth --out data/synth
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/sft.py \
        --config recipes/configs/sft_synth.yaml [--dataset_name org/real3dqa-train ...]

Flags override the YAML file; every field of ScriptArguments and ReweightedConfig is a flag.
This recipe trains without reweighting (``reweighting: none``): any other ``reweighting``
is an error pointing to recipes/3drft.py.
"""

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before torch is imported

from pathlib import Path  # noqa: E402

from hf_real3d.training.recipe import (  # noqa: E402
    make_parser,
    parse_recipe_args,
    recipe_defaults,
    run_recipe,
    train_model,
)

__all__ = ["main", "make_parser", "parse"]

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "sft_synth.yaml"
FIXED = {"reweighting": "none"}


def parse(argv=None):
    return parse_recipe_args(argv, recipe_defaults(CONFIG), fixed=FIXED, recipe="recipes/sft.py",
                             instead="recipes/3drft.py")


def main(script_args, training_args):
    return train_model(script_args, training_args, blind=False)


if __name__ == "__main__":
    run_recipe(main, parse)

"""Blind fine-tuning: the same SceneLM trained without its 3D input (text only).

    accelerate launch recipes/blind_ft.py --config recipes/configs/blind_ft_synth.yaml

This recipe trains the blind model without reweighting (``blind: true``, ``reweighting:
none``): another value of either is an error pointing to the recipe that takes it.
"""

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before torch is imported

from pathlib import Path  # noqa: E402

from hf_real3d.training.args import make_parser, parse_recipe_args, recipe_defaults  # noqa: E402
from hf_real3d.training.pipeline import run_recipe  # noqa: E402
from hf_real3d.training.recipe import train_model  # noqa: E402

__all__ = ["main", "make_parser", "parse"]

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "blind_ft_synth.yaml"
FIXED = {"reweighting": "none", "blind": True}


def parse(argv=None):
    return parse_recipe_args(argv, recipe_defaults(CONFIG), fixed=FIXED,
                             recipe="recipes/blind_ft.py",
                             instead="recipes/sft.py (full model) or recipes/3drft.py")


def main(script_args, training_args):
    return train_model(script_args, training_args, blind=True)


if __name__ == "__main__":
    run_recipe(main, parse)

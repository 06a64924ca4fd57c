"""Blind fine-tuning: the same SceneLM trained without its 3D input (text only).

    accelerate launch recipes/blind_ft.py --config recipes/configs/blind_ft_synth.yaml
"""

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before torch is imported

from hf_real3d.training.recipe import make_parser, parse_recipe_args, run_recipe, train_model  # noqa: E402

__all__ = ["main", "make_parser"]


def main(script_args, training_args):
    training_args.reweighting = "none"
    script_args.blind = True
    return train_model(script_args, training_args, blind=True)


if __name__ == "__main__":
    run_recipe(main, parse_recipe_args)

"""Supervised fine-tuning of SceneLM (full model: text + 3D) on a built dataset.

    hf-real3d synth --out data/synth
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/sft.py \
        --config recipes/configs/sft_synth.yaml [--dataset_name org/real3dqa-train ...]

Flags override the YAML file; every field of ScriptArguments and ReweightedConfig is a flag.
"""

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before torch is imported

from hf_real3d.training.recipe import make_parser, parse_recipe_args, run_recipe, train_model  # noqa: E402

__all__ = ["main", "make_parser"]


def main(script_args, training_args):
    training_args.reweighting = "none"
    return train_model(script_args, training_args, blind=False)


if __name__ == "__main__":
    run_recipe(main, parse_recipe_args)

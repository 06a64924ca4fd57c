"""Supervised fine-tuning of SceneLM (full model: text + 3D).

    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/sft.py \
        --config recipes/configs/sft_synth.yaml [--num_train_epochs 3 ...]

Flags override the YAML file; every field of ScriptArguments and ReweightedConfig is a flag.
"""

from hf_real3d.training.pipeline import make_parser, parse_recipe_args, train_model

__all__ = ["main", "make_parser"]


def main(script_args, training_args):
    training_args.reweighting = "none"
    return train_model(script_args, training_args, blind=False)


if __name__ == "__main__":
    main(*parse_recipe_args())

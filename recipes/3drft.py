"""3D-reweighted fine-tuning (3DR-FT) of SceneLM.

    accelerate launch recipes/3drft.py --config recipes/configs/3drft_synth.yaml
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/3drft.py \
        --config recipes/configs/3drft_synth.yaml --reweighting official

``reweighting: paper`` needs the blind fine-tuned model (``blind_model_path``): when it
is missing this recipe trains it first (same data, 3D removed) and saves it there.
"""

from pathlib import Path

from hf_real3d.training.pipeline import make_parser, parse_recipe_args, train_model

__all__ = ["main", "make_parser"]


def main(script_args, training_args):
    if training_args.reweighting == "paper":
        blind_path = script_args.blind_model_path or str(Path(training_args.output_dir) / "blind")
        script_args.blind_model_path = blind_path
        if not (Path(blind_path) / "config.json").is_file():
            import dataclasses

            blind_args = dataclasses.replace(training_args, output_dir=blind_path,
                                             reweighting="none")
            train_model(script_args, blind_args, blind=True)
    return train_model(script_args, training_args, blind=False)


if __name__ == "__main__":
    main(*parse_recipe_args())

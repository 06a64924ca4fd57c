"""3D-reweighted fine-tuning (3DR-FT) of a Hugging Face VLM on a built dataset's rendered
views (a BEV with numbered objects + the agent's egocentric frame, GPT4Scene-style).

    hf-real3d synth --out data/synth && hf-real3d render-views --dataset data/synth
    accelerate launch recipes/3drft_vlm.py --config recipes/configs/3drft_vlm.yaml
    accelerate launch --config_file recipes/accelerate/zero3.yaml recipes/3drft_vlm.py \
        --config recipes/configs/3drft_vlm.yaml --model_name_or_path path/to/your/vlm

The views config is rendered when the folder lacks it (one log line says so).
"""

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before torch is imported

from pathlib import Path  # noqa: E402

from hf_real3d.training.args import recipe_defaults  # noqa: E402
from hf_real3d.training.pipeline import run_recipe  # noqa: E402
from hf_real3d.training.vlm_recipe import parse_vlm_args, train_vlm  # noqa: E402

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "3drft_vlm.yaml"

__all__ = ["main"]


def main(script_args, training_args):
    return train_vlm(script_args, training_args)


def parse(argv=None):
    return parse_vlm_args(argv, recipe_defaults(CONFIG))


if __name__ == "__main__":
    run_recipe(main, parse)

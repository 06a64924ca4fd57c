"""3D-reweighted fine-tuning (3DR-FT) of SceneLM on a built dataset.

    hf-real3d synth --out data/synth
    accelerate launch recipes/3drft.py --config recipes/configs/3drft_synth.yaml
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/3drft.py \
        --config recipes/configs/3drft_synth.yaml --reweighting official

``reweighting: paper`` runs in two named stages: (1) the blind model named by
``blind_model_path``, reused only if it was trained with this run's architecture, data and
settings (else an error), or trained into ``<output_dir>/blind`` when the config names none
(a stale one there is retrained, and the log says why); (2) 3DR-FT with its log-probs.
"""

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before torch is imported

from pathlib import Path  # noqa: E402

from hf_real3d.training.args import make_parser, parse_recipe_args, recipe_defaults  # noqa: E402
from hf_real3d.training.pipeline import run_recipe, train_3drft  # noqa: E402

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "3drft_synth.yaml"

__all__ = ["main", "make_parser", "parse"]


def parse(argv=None):
    return parse_recipe_args(argv, recipe_defaults(CONFIG))


def main(script_args, training_args):
    return train_3drft(script_args, training_args)


if __name__ == "__main__":
    run_recipe(main, parse)

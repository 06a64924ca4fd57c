"""Predictions of a trained SceneLM at every viewpoint: the launcher of the packaged flow
hf_real3d.recipes.predict (read it there), as `hf-real3d predict` runs it.

    python recipes/predict.py --model outputs/recipes/3drft --out outputs/recipes/preds
"""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["predict", *sys.argv[1:]]))

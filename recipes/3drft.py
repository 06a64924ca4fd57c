"""3D-reweighted fine-tuning (3DR-FT) of SceneLM: the launcher of the packaged flow
hf_real3d.recipes.threedrft (read it there), as `hf-real3d train 3drft` runs it.

    accelerate launch recipes/3drft.py --config recipes/configs/3drft_synth.yaml
"""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", "3drft", *sys.argv[1:]]))

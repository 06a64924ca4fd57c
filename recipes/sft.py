"""Supervised fine-tuning of SceneLM (3D and text): the launcher of the packaged flow
hf_real3d.recipes.sft (read it there), as `hf-real3d train sft` runs it.

    accelerate launch recipes/sft.py --config recipes/configs/sft_synth.yaml
"""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", "sft", *sys.argv[1:]]))

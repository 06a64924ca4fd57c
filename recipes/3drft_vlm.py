"""3DR-FT of a Hugging Face VLM on rendered views: the launcher of the packaged flow
hf_real3d.recipes.threedrft_vlm (read it there), as `hf-real3d train 3drft_vlm` runs it.

    accelerate launch recipes/3drft_vlm.py --config recipes/configs/3drft_vlm.yaml
"""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", "3drft_vlm", *sys.argv[1:]]))

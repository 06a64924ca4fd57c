"""Blind (text-only) fine-tuning of SceneLM: the launcher of the packaged flow
hf_real3d.recipes.blind_ft (read it there), as `hf-real3d train blind_ft` runs it.

    accelerate launch recipes/blind_ft.py --config recipes/configs/blind_ft_synth.yaml
"""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", "blind_ft", *sys.argv[1:]]))

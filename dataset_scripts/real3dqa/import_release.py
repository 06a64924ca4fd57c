"""Import the official Real-3DQA release as a dataset folder (see README.md here)."""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["import-real3dqa", *sys.argv[1:]]))

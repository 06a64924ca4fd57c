"""Build 3DSRBench as a dataset folder: the official TSV and/or synthetic renders (see
README.md here)."""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-3dsrbench", *sys.argv[1:]]))

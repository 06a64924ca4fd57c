"""Build Real-3DQA from SQA3D-format data, scenes and predictions (see README.md here)."""

import sys

from hf_real3d.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-real3dqa", *sys.argv[1:]]))

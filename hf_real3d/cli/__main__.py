"""``python -m hf_real3d.cli``: the ``hf-real3d`` command line."""

import sys

from hf_real3d.cli.dispatch import main

sys.exit(main())

"""Is a de-biased test set still text-solvable? The test-set stress test (TsT) and
iterative bias pruning (IBP), after Brown et al. 2025, on any dataset.

* :mod:`.items` reads a test set's non-visual inputs (text, answer, group, type);
* :mod:`.stress` runs the grouped k-fold text-only diagnostics and the pruning;
* :mod:`.run` is ``hf-real3d stress-test``: files, plot, report and dataset configs.
"""

from hf_real3d.debias.config import PruneConfig
from hf_real3d.debias.items import Items, load_items
from hf_real3d.debias.stress import DIAGNOSTICS, StressResult, prune, stress_test

__all__ = ["DIAGNOSTICS", "Items", "PruneConfig", "StressResult", "load_items", "prune",
           "stress_test"]

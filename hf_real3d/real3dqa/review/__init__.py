"""People reviewing rotated items: the queue and its records, agreement, and the export.

* :mod:`~hf_real3d.real3dqa.review.queue`: a review folder (``review.json``, the checker's
  suggestions stored in ``checks/``, one append-only file of decisions per annotator),
  each annotator's queue, decisions that supersede earlier ones with the history kept, and
  ``review-import`` of decisions made elsewhere;
* :mod:`~hf_real3d.real3dqa.review.agreement`: Cohen's kappa per pair with its n and a
  bootstrap interval, pooled by items; self-consistency on unannounced repeats; both on what
  the export compares;
* :mod:`~hf_real3d.real3dqa.review.export`: the reviewed set in the release's format
  (written by :func:`hf_real3d.real3dqa.format.write_release`), with the proposed repairs a
  reviewer accepted, or all of them on request.

Suggestions (what the checker proposes) are kept apart from responses (what a named person
decided), as Argilla does.
"""

from .agreement import PAPER_KAPPA, PAPER_SELF_CONSISTENCY, kappa, review_stats, stats_markdown
from .export import REPAIRS, EmptyExport, export_rotations
from .queue import (
    DECISIONS,
    MAX_REASON,
    JudgedElsewhere,
    ReviewEntry,
    ReviewFolder,
    check_annotator,
    import_decisions,
    item_label,
)

__all__ = ["DECISIONS", "ReviewEntry", "ReviewFolder", "JudgedElsewhere", "check_annotator",
           "import_decisions", "item_label", "MAX_REASON", "review_stats", "stats_markdown",
           "kappa", "export_rotations", "EmptyExport", "REPAIRS", "PAPER_KAPPA",
           "PAPER_SELF_CONSISTENCY"]

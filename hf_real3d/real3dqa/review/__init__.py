"""People reviewing rotated items: the folder, the decisions, the queue, agreement, export.

* :mod:`~hf_real3d.real3dqa.review.folder`: a review folder's own files (``review.json``,
  the checker's suggestions stored in ``checks/``), made once and read without the set;
* :mod:`~hf_real3d.real3dqa.review.log`: the decisions people make, one append-only file
  per annotator, read and written in one place; a later decision supersedes (history kept);
* :mod:`~hf_real3d.real3dqa.review.queue`: :class:`ReviewFolder` (``create`` or ``open``),
  the rotation set's items, each annotator's queue with unannounced repeats, and the checks
  a decision passes before it is written;
* :mod:`~hf_real3d.real3dqa.review.importer`: ``review-import`` of decisions made elsewhere;
* :mod:`~hf_real3d.real3dqa.review.agreement`: Cohen's kappa per pair with its n and a
  bootstrap interval, pooled over item pairs; self-consistency on unannounced repeats; both on
  what the export compares, from the decisions and the stored checks alone;
* :mod:`~hf_real3d.real3dqa.review.export`: the reviewed set in the release's format
  (written by :func:`hf_real3d.real3dqa.format.write_release`), with the proposed repairs a
  reviewer accepted, or all of them on request.

Suggestions (what the checker proposes) are kept apart from responses (what a named person
decided), as Argilla does.
"""

from .agreement import PAPER_KAPPA, PAPER_SELF_CONSISTENCY, kappa, review_stats, stats_markdown
from .export import REPAIRS, EmptyExport, export_rotations
from .importer import import_decisions
from .log import DECISIONS, DecisionLog, JudgedElsewhere, ReviewEntry, check_annotator, item_label
from .queue import MAX_REASON, MAX_TEXT, ReviewFolder

__all__ = ["DECISIONS", "ReviewEntry", "ReviewFolder", "DecisionLog", "JudgedElsewhere",
           "check_annotator", "import_decisions", "item_label", "MAX_REASON", "MAX_TEXT",
           "review_stats", "stats_markdown", "kappa", "export_rotations", "EmptyExport",
           "REPAIRS", "PAPER_KAPPA", "PAPER_SELF_CONSISTENCY"]

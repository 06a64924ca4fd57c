"""People reviewing rotated items, one module each (its docstring says what it holds): the
folder's own files (``folder``), the decisions (``log``), the queue (``queue``), decisions
made elsewhere (``importer``), agreement (``agreement``) and the export (``export``).

Suggestions (what the checker proposes) are kept apart from responses (what a named person
decided), as Argilla does.
"""

from .agreement import PAPER_KAPPA, PAPER_SELF_CONSISTENCY, kappa, review_stats, stats_markdown
from .export import REPAIRS, EmptyExport, export_rotations
from .importer import import_decisions
from .log import DECISIONS, DecisionLog, JudgedElsewhere, ReviewEntry, check_annotator, item_label
from .queue import LISTED, MAX_REASON, MAX_TEXT, Refused, ReviewFolder, gap_cost

__all__ = ["DECISIONS", "ReviewEntry", "ReviewFolder", "DecisionLog", "JudgedElsewhere",
           "check_annotator", "import_decisions", "item_label", "MAX_REASON", "MAX_TEXT",
           "LISTED", "Refused", "gap_cost",
           "review_stats", "stats_markdown", "kappa", "export_rotations", "EmptyExport",
           "REPAIRS", "PAPER_KAPPA", "PAPER_SELF_CONSISTENCY"]

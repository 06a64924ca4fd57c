"""Where the project and the shared real release files are."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED_REAL = ROOT.parent / "shared" / "real"

"""`hf-real3d check-rotations` and `hf-real3d correct-rotations` on the real Real-3DQA release
(text rules), end to end.

What the user runs: the CLI from the release files to check.json / flags.jsonl / report.md,
timed as a subprocess. Baseline in the same run: a Python process that starts, imports the
library and reads and validates the release (what any command on the release pays), so the
ratio is the cost of the checks on top of reading the files.
Targets: check-rotations under 5 s on 2 cores, answer rules included (issue 46);
correct-rotations, which checks the release, derives and checks the derived set again, under
10 s (issue 62).

    python bench/check_rotations.py [--release ../shared/real/real3dqa] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report

ROOT = Path(__file__).resolve().parents[1]
READ = "import sys; from hf_real3d.real3dqa.format import read_release; read_release(sys.argv[1])"


def _best(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", default=str(ROOT.parent / "shared/real/real3dqa"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if not Path(args.release).is_dir():
        print(f"no release files at {args.release}: nothing to time")
        return
    exe = Path(sys.executable).parent / "hf-real3d"
    with tempfile.TemporaryDirectory() as tmp:
        base = _best([sys.executable, "-c", READ, args.release], args.repeats)
        out = Path(tmp) / "chk"
        took = _best([str(exe), "check-rotations", "--dataset", args.release, "--out",
                      str(out)], args.repeats)
        s = json.loads((out / "check.json").read_text())
    print(f"check-rotations on the release: {took:.2f} s (start + read {base:.2f} s); "
          f"{s['items']} items: " + ", ".join(f"{n} {v}" for v, n in s["verdicts"].items()))
    report("check-rotations, real release, text and answer rules (CLI, s)", took, "s",
           baseline=base, target="< 5 s", ok=took < 5)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "corrected"
        took = _best([str(exe), "correct-rotations", "--dataset", args.release, "--out",
                      str(out)], args.repeats)
        s = json.loads((out / "correction.json").read_text())
    print(f"correct-rotations on the release: {took:.2f} s; {s['kept_groups']} groups kept")
    report("correct-rotations, real release (CLI, s)", took, "s", baseline=base,
           target="< 10 s", ok=took < 10)


if __name__ == "__main__":
    main()

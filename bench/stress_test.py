"""`hf-real3d stress-test --diagnostic rf` on the real Real-3DQA release, end to end.

What the user runs: the CLI from files (a folder imported with `hf-real3d import-real3dqa`)
to `stress_test.json`, timed as a subprocess. Baseline in the same run: the same CLI start
and folder read, then a plain majority-answer pass (the training folds' most frequent
answer per held-out fold), so the ratio is the cost of the diagnostic itself.
Target (issue 31): well under 60 s on 2 cores.

    python bench/stress_test.py [--release ../shared/real/real3dqa]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report

ROOT = Path(__file__).resolve().parents[1]
MAJORITY = """
import sys
from collections import Counter
from sklearn.model_selection import GroupKFold
from hf_real3d.debias import load_items
it = load_items(sys.argv[1])
right = 0
for tr, te in GroupKFold(5, shuffle=True, random_state=0).split(it.text, it.labels, it.groups):
    top = Counter(it.labels[i] for i in tr).most_common(1)[0][0]
    right += sum(it.labels[i] == top for i in te)
print(f"majority {100 * right / len(it):.1f}")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", default=str(ROOT.parent / "shared/real/real3dqa"))
    args = ap.parse_args()
    if not Path(args.release).is_dir():
        print(f"no release files at {args.release}: nothing to time")
        return
    exe = Path(sys.executable).parent / "hf-real3d"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "release"
        subprocess.run([str(exe), "import-real3dqa", "--release", args.release, "--out",
                        str(folder)], check=True, capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", MAJORITY, str(folder)], check=True,
                       capture_output=True)
        base = time.perf_counter() - t0
        t0 = time.perf_counter()
        proc = subprocess.run([str(exe), "stress-test", "--dataset", str(folder), "--out",
                               str(Path(tmp) / "st"), "--diagnostic", "rf"], check=True,
                              capture_output=True, text=True)
        took = time.perf_counter() - t0
    line = next(x for x in proc.stdout.splitlines() if x.startswith("non-visual"))
    print(f"stress-test rf on the release: {took:.1f} s (majority pass {base:.1f} s); {line}")
    report("stress-test rf, real release (CLI, s)", took, "s", baseline=base, target="< 60 s",
           ok=took < 60)


if __name__ == "__main__":
    main()

"""`make demo` from a fresh clone, set-up included, as a new user runs it.

Clones this checkout's HEAD beside it (so ``../shared`` resolves as in CI), then times in
that clone ``make install`` (the set-up: venv, pinned packages, Debian packages when
missing) and ``make demo`` (the demo alone, its set-up step then a no-op), each with the
peak of the summed memory of every process it starts (the demo trains in worker
processes). The baseline in the same run is the set-up, so the ratio says how much of the
wait is the demo. Targets (issue 32): set-up + demo <= 600 s and <= 4 GiB on the 2-core
machine, run alone. Takes about as long as the demo (minutes); ``make bench`` runs it with
the others.

    python bench/demo.py [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], cwd: Path, log: Path) -> tuple[float, float]:
    """Run ``cmd`` in ``cwd``; (wall seconds, peak MiB of the summed resident memory of it
    and every process under it, sampled every 0.2 s: the demo's training workers count)."""
    # psutil comes with accelerate (pinned in constraints.txt)
    import psutil

    t0 = time.perf_counter()
    peak = 0
    with log.open("w") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            total = 0
            try:
                for p in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += p.memory_info().rss
            except psutil.Error:
                pass
            peak = max(peak, total)
            time.sleep(0.2)
    took = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed in a fresh clone (exit {proc.returncode}); the end "
                 f"of its output:\n{log.read_text(errors='replace')[-3000:]}")
    return took, peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", action="store_true", help="keep the clone (its outputs/demo)")
    args = ap.parse_args()
    if not shutil.which("make"):
        print("no make here: nothing to time")
        return
    clone = Path(tempfile.mkdtemp(prefix=".bench-demo-", dir=ROOT.parent))
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        setup, setup_mib = timed(["make", "install"], clone, clone / "install.log")
        demo, demo_mib = timed(["make", "demo"], clone, clone / "demo.log")
    finally:
        if not args.keep:
            shutil.rmtree(clone, ignore_errors=True)
    total, peak = setup + demo, max(setup_mib, demo_mib)
    print(f"make demo from a fresh clone: {total:.0f} s (set-up {setup:.0f} s, demo "
          f"{demo:.0f} s), peak {peak:.0f} MiB")
    report("make demo, fresh clone incl. set-up (s)", total, "s", baseline=setup,
           target="<= 600 s", ok=total <= 600)
    report("make demo, peak memory (MiB)", peak, "MiB", target="<= 4096 MiB", ok=peak <= 4096)


if __name__ == "__main__":
    main()

"""Run every ``bench/*.py`` and print one table of measurements, ratios and targets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    rows, failed = [], []
    for script in sorted(HERE.glob("*.py")):
        # _*: helpers; study_*: design studies that measure models, not speed
        if script.name.startswith(("_", "study_")) or script.name == "run_all.py":
            continue
        print(f"== {script.name}", flush=True)
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        sys.stdout.write(proc.stdout)
        if proc.returncode:
            sys.stdout.write(proc.stderr[-3000:])
            failed.append(script.name)
        rows += [json.loads(line[6:]) for line in proc.stdout.splitlines()
                 if line.startswith("BENCH ")]
    print()
    w = max([len("benchmark"), *(len(r["name"]) for r in rows)])
    print(f"| {'benchmark':<{w}} | {'value':>10} | {'unit':<6} | {'ratio':>7} | "
          f"{'target':<12} | ok |")
    print(f"|{'-' * (w + 2)}|{'-' * 12}|{'-' * 8}|{'-' * 9}|{'-' * 14}|----|")
    for r in rows:
        ok = {True: "yes", False: "NO", None: ""}[r.get("ok")]
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else ""
        print(f"| {r['name']:<{w}} | {r['value']:>10} | {r['unit']:<6} | {ratio:>7} | "
              f"{r.get('target', ''):<12} | {ok:<2} |")
    if failed:
        print(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

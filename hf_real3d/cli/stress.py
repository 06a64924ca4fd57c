"""``hf-real3d stress-test``: is a test set text-solvable?"""

from __future__ import annotations

import sys

from hf_real3d.debias.config import StressTestConfig


def cmd_stress_test(o: StressTestConfig) -> None:
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.debias.run import run_stress_test

    s = run_stress_test(o)
    sv = s["solvability"]
    if s.get("note"):
        print(f"note: {s['note']}", file=sys.stderr)
    print(f"non-visual solvability {sv['overall']:.1f}% [{sv['ci'][0]:.1f}, {sv['ci'][1]:.1f}] "
          f"(majority {s['majority']:.1f}, chance {s['chance']:.1f}, n {s['n']})")
    if "final" in s:
        print(f"after pruning: {s['final']['kept']} kept, solvability "
              f"{s['final']['solvability']:.1f}")
    print(f"wrote {o.out}/stress_test.json, scores.jsonl, stress_test.png, report.md")

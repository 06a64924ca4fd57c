"""The package's shape against issue 54's bar: its lines, modules over 600 lines, functions
over 100 and over 80 lines, classes over 300, functions with more than 10 parameters (a
model's ``forward`` aside) and private names imported across modules.

    python bench/package_shape.py [hf_real3d]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
    if a.args and a.args[0].arg in ("self", "cls"):
        n -= 1
    return n


def shape(root: Path) -> dict[str, list[tuple[int, str]] | int]:
    found: dict[str, list] = {name: [] for name in (
        "modules over 600 lines", "functions over 100 lines", "functions over 80 lines",
        "classes over 300 lines", "functions with more than 10 parameters",
        "private names imported across modules")}
    total = 0
    for path in sorted(root.rglob("*.py")):
        src = path.read_text()
        lines = src.count("\n")
        total += lines
        if lines > 600:
            found["modules over 600 lines"].append((lines, str(path)))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                where = f"{path}:{node.name}"
                if length > 100:
                    found["functions over 100 lines"].append((length, where))
                elif length > 80:
                    found["functions over 80 lines"].append((length, where))
                if _parameters(node) > 10 and node.name != "forward":
                    found["functions with more than 10 parameters"].append(
                        (_parameters(node), where))
            elif isinstance(node, ast.ClassDef):
                length = node.end_lineno - node.lineno + 1
                if length > 300:
                    found["classes over 300 lines"].append((length, f"{path}:{node.name}"))
            elif isinstance(node, ast.ImportFrom) and (node.level or (
                    node.module or "").startswith("hf_real3d")):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found["private names imported across modules"].append(
                            (0, f"{path}: {node.module}.{alias.name}"))
    return {"lines": total, **found}


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1] / "hf_real3d"
    result = shape(root)
    print("lines", result.pop("lines"))
    for name, rows in result.items():
        print(f"{name}: {len(rows)}")
        for size, where in sorted(rows, reverse=True):
            print(f"    {size or ''} {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

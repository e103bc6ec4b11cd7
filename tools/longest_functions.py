"""The longest functions under a folder, by the line span of their definition (AST), longest first.

    python tools/longest_functions.py src/tandem/completion [N]
"""

from __future__ import annotations

import ast
import pathlib
import sys


def main() -> None:
    root = pathlib.Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    rows: list[tuple[int, str]] = []
    for file in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                rows.append((node.end_lineno - node.lineno + 1, f"{file.relative_to(root)}:{node.lineno} {node.name}"))
    for lines, name in sorted(rows, reverse=True)[:count]:
        print(lines, name)


if __name__ == "__main__":
    main()

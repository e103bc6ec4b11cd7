"""What the gate's path rules cost per question, now that ignore files are looked at again for each request.

Setting: a git repository in a temporary directory with a root `.gitignore` and a nested one, a file three
directories deep, opened in a `Gate`. Measured: `Gate.document` (asked once per request: it starts a new
epoch, so the ignore files above the path are stat'ed again) and `Gate.source` (asked per snippet path in
a request: the epoch's stats and the filter's kept verdicts serve it). It prints what it measured; it
passes or fails nothing.

    python bench/bench_gate_path.py [--calls N]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import tempfile
import time

from tandem.completion.gate import Gate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        root = pathlib.Path(name)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "src" / "pkg" / "sub").mkdir(parents=True)
        (root / ".gitignore").write_text("build/\n*.log\n")
        (root / "src" / "pkg" / ".gitignore").write_text("gen_*.py\n")
        (root / "src" / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
        gate = Gate(root=root)
        uri = (root / "src" / "pkg" / "sub" / "mod.py").as_uri()
        gate.open(uri, "x = 1\n")
        for _ in range(100):
            gate.document(uri)
        started = time.perf_counter()
        for _ in range(args.calls):
            gate.document(uri)
        document_us = (time.perf_counter() - started) / args.calls * 1e6
        started = time.perf_counter()
        for _ in range(args.calls):
            gate.source("src/pkg/sub/mod.py")
        source_us = (time.perf_counter() - started) / args.calls * 1e6
    print(f"Gate.document {document_us:.1f} us a call, Gate.source {source_us:.1f} us a call ({args.calls} calls)")


if __name__ == "__main__":
    main()

"""tandem: an AI-completion language server.

The distribution installs one package, `tandem`, whose parts live in the repository's top-level folders:
`tandem.lsp` (lsp/, the edge), `tandem.completion` (completion/, the model side), `tandem.cache` (cache/,
data structures) are the product; `tandem.sim` (sim/, the stand-in provider) and `tandem.eval` (eval/, replay
and evaluation) are tooling the product never imports. `tandem.cli` is the `tandem` command.
"""

from __future__ import annotations

__version__ = "0.1.0"

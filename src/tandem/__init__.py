"""tandem: an AI-completion language server.

The distribution installs one package, `tandem` (src/tandem/ in the repository, nothing else at the top
level). The product, layered one way (`lsp` -> `completion` -> `cache`):

- `lsp/`         the edge: the pygls server, the only part that speaks LSP
- `completion/`  the model side, a room per feature (inline, next_edit, edit, routing, providers, ...)
- `cache/`       pure data structures: lines, tokens, context windows, the completion cache

The tooling, which the product never imports:

- `sim/`         the stand-in model provider (`tandem sim`), which imports nothing of the product
- `eval/`        replay, git-history tasks, router and edit evaluation, trace reports
- `local/`       a local model pair on this machine (`tandem local setup`, `tandem check`)
- `cli.py`       the `tandem` command (`__main__.py` runs it for `python -P -m tandem`)
"""

from __future__ import annotations

__version__ = "0.1.0"

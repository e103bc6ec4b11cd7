"""`tandem replay` and `tandem demo`: an editor's typing, replayed against `tandem serve` over stdio.

sources.py             which files, and which span of each is removed and typed back
keystrokes.py          what one key press inserts, and the typist's rhythm
client.py              the LSP client (VS Code's capabilities, utf-16 positions, $/cancelRequest)
session.py             one span typed back: key presses, requests, accepting matching suggestions
runner.py              a whole run: simulator (unless a provider is given), server, sessions, trace
summary.py             the figures: client counts joined with the server's trace records
cli.py                 the command-line options, the progress bar, printing
vscode_capabilities.py VS Code's recorded initialize capabilities
edits.py               `tandem replay --edits`: the router on a real git history
next_edits.py          `tandem replay --next-edits`: next-edit suggestions on real edit sequences
next_edit_summary.py   what `--next-edits` reports: the client's tally, the figures, the text
"""

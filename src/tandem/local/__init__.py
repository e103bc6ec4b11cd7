"""A local model pair on this machine: llama.cpp's `llama-server` with Qwen2.5-Coder (tooling, not the server).

- `pins`: what is fetched and the sha256 each file must have (llama.cpp's source, the models' parts).
- `setup`: `tandem local setup`: build `llama-server` once per machine, fetch and verify the weights, all
  into the user's cache directory.
- `servers`: start `llama-server` for a model with the flags tandem is measured with, and stop it.
- `check`: `tandem check`: ask each configured model whether it answers, how fast, whether its prompt cache
  is reused and whether fill-in-the-middle works, before any editor is opened.
- `cli`: the command line of `tandem local setup` and `tandem local serve`.

Nothing here is imported by `tandem serve`: the language server talks to whatever serves the model over
HTTP, and this package only makes one such server for people (and tests) who have none.
"""

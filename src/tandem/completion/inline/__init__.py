"""Inline completions, the keystroke path: cache, debounce, context, stream, post-process, store, speculate.

Start at `engine.Engine.complete`; `streams` keeps model streams for typing through, `units` answers with the
first useful part of a stream, `postprocess` cleans it, `prefetch` speculates, `debounce` decides how long a
miss waits, `prompts` shapes chat prompts and `local_prompt` the prompt for a model on the user's machine,
`closers` handles the closing characters an editor auto-inserted after the cursor, `request` holds the values
that cross from the LSP edge.
"""

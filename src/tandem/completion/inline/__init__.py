"""Inline completions, the keystroke path: cache, debounce, context, stream, post-process, store, speculate.

Start at `engine.Engine.complete`; `streams` keeps model streams for typing through, `units` answers with the
first useful part of a stream, `postprocess` cleans it, `closers` finds the auto-closed brackets it replaces,
`prefetch` speculates, `debounce` decides how long a miss waits, `prompts` builds the request in the shape the
tier's API takes (`local_prompt`: the window for a model on this machine), `answer` cleans a chat model's
answer as it streams, `request` holds the values that cross from the LSP edge.
"""

"""The model side of tandem: everything between a request the LSP edge hands in and the text it hands back.
No LSP here (plain dataclasses in and out); `tandem.cache` below it holds the pure data structures.

A room per feature; open the module named after each to start reading:

inline/       the keystroke path, top to bottom in `inline.engine.Engine.complete`
next_edit/    next-edit suggestions, `next_edit.suggest.NextEdits.suggest`
edit/         instruction edits, `edit.service.Edits.run` (the model side in `edit.flow.EditFlow.run`)
routing/      fast or accurate, and every input the router reads: `routing.router`
providers/    the one path to a model: `providers.tiers.Tier.reading` over the backends, breaker and transport
observe/      trace records, OpenTelemetry export, live stats, the day's spend against [budget]: `observe.trace`
config/       the typed configuration tree (`config.tree`) and what a workspace may set (`config.trust`)
machine/      the only door to the user's machine: workspace files, ignore files, git, where edits may write
session.py    the composition root: the shared parts and the three features, configured in one place
gate.py       what may leave the machine, decided in one place
workspace.py  the workspace as the model side sees it: privacy verdicts, symbols, context windows
"""

"""Instruction edits (the hard path): ask a model, read its answer, check it, carry it over the user's typing.

Start at `service.Edits.run` (one edit from the request to the user's files: the router's inputs gathered,
the flow run, the result applied); `flow.EditFlow.run` is its model side. `types` holds the values in and
out of the flow; `window` what a prompt shows within the largest window; `prompt` the messages; `parse`
(with `udiff`, `locate`) reads an answer into `file_edits.FileEdit`s; `validate` and `references` check
them; `rebase` moves them over the user's changes; `answer` chains parse -> validate -> rebase; `checks`
runs those checks off the event loop.
"""

"""Instruction edits (the hard path): ask a model, read its answer, check it, carry it over the user's typing.

Start at `service.Edits.run` (gather the router's one input, run the flow, apply through the workspace's one
interface, `service.Workspace`), then `flow.EditFlow.run` (route, plan, context, prompt, then the plan).

- `service`      one edit from the request to the user's files, through `Workspace`
- `flow`         `EditFlow`: route, choose the plan, build the prompt, hand over to the plan, write the trace
- `escalation`   the one-model-at-a-time plans ("fast-first", "accurate") and the rule `after_failure`
- `hedged`       the "hedged" plan: both models at once
- `draft_check`  the "draft-check" plan's second step: the accurate model checks the fast draft
- `attempt`      one model's try: the request, the gate, the stream, the checked answer, the accounting
- `ending`       how an edit ends: ready or failed, and its trace record closed
- `types`        the values in and out of the flow
- `window`       what a prompt shows within the largest window
- `prompt`       the messages
- `parse`        reads an answer into `file_edits.FileEdit`s (with `udiff`, `locate`)
- `udiff`        unified-diff answers
- `locate`       where a block of an answer goes in the file
- `file_edits`   `FileEdit` and its errors
- `validate`     the checks of an edited file (still parses, no new undefined names, size)
- `references`   no name removed that another file still imports
- `rebase`       moves edits over the user's changes
- `answer`       chains parse -> validate -> rebase
- `checks`       runs those checks off the event loop
"""

"""tandem.eval: tooling that measures the product. It may use the product; the product never imports it.

- `replay/`           `tandem replay` and `tandem demo`: an editor's typing replayed against `tandem serve`
- `history`           edit tasks from a git history: each commit an instruction with a known right answer
- `next_edit_tasks`   next-edit tasks from a git history: commits that make several separate changes to a file
- `user_selection`    the selection a user would make for an edit: the function or block they work in
- `code_label`        what a commit changed in code: each file's role, and the "hard" label
- `router_eval`       how well the router's pre-generation features predict real edits
- `router_fit`        fitting the router's weights, judged only on a history they were not fitted on
- `router_loo`        the router judged leave-one-out over several repositories
- `router_bands`      the `[edit]` bands on the router's score, chosen on held-out labels
- `router_shape`      the router by the selection's shape, fitted and judged held out
- `router_before`     the hand-set router before its weights were fitted (printed beside the fitted one)
- `edit_eval`         time to a correct edit: the router against always-fast and always-accurate (simulated)
- `edit_runs`         what other routers would have done on the same edit tasks, from the strategies' runs
- `edit_hedging`      strategies that use the time the router cannot save
- `edit_cost`         money beside tokens: the list prices the simulated tiers are priced at
- `edit_report`       the report of the simulated edit comparison, as text and JSON
- `trace_report`      `tandem trace report`: latency, outcomes and sources from trace files
- `trace_html`        `tandem trace report --html`: one self-contained page of plots
- `perfetto`          `tandem trace export --perfetto`: trace records as Chrome Trace Event JSON
"""

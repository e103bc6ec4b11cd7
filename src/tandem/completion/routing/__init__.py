"""The router: fast or accurate, decided from what can be seen before generating, with its reasons.

Start at `router` (its one input `RouteInputs`, the features and the score); `weights` is its fitted model;
`inputs` gathers the git inputs of an edit under one deadline; every input it reads has a module of its own:
`selection_shape`, `symbol_lookup` / `workspace_symbols`, `working_diff` (with `change_in_progress`, the
user's changes counted from texts), `file_history`, `similar_commits`, `change_roles`. Nothing here imports
the edit path (`completion.edit` imports this package, never the other way).
"""

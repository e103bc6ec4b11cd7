"""The router: fast or accurate, decided from what can be seen before generating, with its reasons.

Start at `router` (features and score); `weights` is its fitted model; `inputs` gathers the git inputs for an
edit under one deadline; every input it reads has a module of its own: `selection_shape`, `symbol_lookup` /
`workspace_symbols`, `working_diff`, `file_history`, `similar_commits`, `change_roles`.
"""

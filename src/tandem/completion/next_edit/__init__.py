"""Next edits: the fast model predicting the user's next change near the cursor.

Start at `suggest.NextEdits.suggest`; `pause` decides when to ask, `context` what the model is shown,
`prompt` the prompt and reading the answer, `split` asks the region in two parts, `hunks` judges a streaming
rewrite, `rebase` carries a rewrite over the user's newer keys, `types` the request, answer and trace record.
"""

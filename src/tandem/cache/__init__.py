"""Pure data structures and algorithms under the model side: no networking, no LSP, and no file read
(callers hand them text; the tokenizer's encoding comes through `completion.machine.tokenizer_files`).

- `lines`         a document's text as lines, updated in place at the cost of the edit
- `tokens`        token counting with tiktoken, offline
- `token_index`   per-document token counts in blocks of lines, updated incrementally
- `context`       context windows: what the model sees around the cursor, under a token budget
- `snippets`      cross-file snippets for context windows, and what they cost
- `candidates`    which cross-file snippets a window could use, scored by relevance
- `symbols`       a light workspace symbol index: where names are defined, what each file imports
- `imports`       what a source file imports, and which workspace file each import names
- `completions`   the completion cache: a keystroke answered from a completion already received
- `edit_history`  the user's recent edits across open documents, as a compact diff history
- `edit_region`   the editable region around the cursor, and a rewrite of it as the smallest edits
- `privacy`       whether a file may be sent to a model, and if not, why
- `secrets`       what a credential looks like in a text
"""

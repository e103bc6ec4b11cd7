"""LSP handlers by feature: `lifecycle` (initialize, initialized, shutdown, didChangeConfiguration),
`documents` (didOpen, didChange, didClose), `completion` (inlineCompletion and completion), `next_edit`
(copilotInlineEdit and its commands), `edits` (the `tandem.edit` command and code actions), `health`
(`tandem/health`).
"""

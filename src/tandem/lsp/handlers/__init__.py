"""LSP handlers, one module per LSP method or method family, each handler a named function `(ls, params)`
listed in one table (`registry`):

- `registry`: the table of every method and command tandem answers, and `register(server)`;
- `lifecycle`: initialize, initialized, shutdown;
- `configuration`: workspace/didChangeConfiguration;
- `workspace_folders`: workspace/didChangeWorkspaceFolders, and the check every workspace folder passes;
- `text_document_sync`: textDocument/didOpen, didChange, didSave, didClose (the one place documents are
  synchronised, pygls' own document copies bypassed included);
- `inline_completion`: textDocument/inlineCompletion (ghost text);
- `completion`: textDocument/completion (the suggestion and the next edit as menu items);
- `completion_feedback`: the `tandem.accepted` command, textDocument/didShowCompletion and
  didPartiallyAcceptCompletion;
- `next_edit`: textDocument/copilotInlineEdit, didShowInlineEdit, the `tandem.nextEditAccepted` and
  `tandem.nextEditDismissed` commands, and the next edit's code action and menu item;
- `code_action`: textDocument/codeAction, assembled in one place from the next-edit and edit offers;
- `edits`: the `tandem.edit` command (workspace/executeCommand), with its progress and workspace/applyEdit;
- `health`: `tandem/health`, the server's vital signs;
- `warm`: `tandem/warm`, where the cursor rests before typing (a local model reads that prompt meanwhile).
"""

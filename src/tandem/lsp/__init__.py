"""The edge: the language server, the only part of tandem that speaks LSP (pygls, lsprotocol).

- `server`          `TandemServer`, `TandemProtocol` (pygls' protocol, fixed where it leaks or lingers),
                    `build_server()`
- `handlers/`       the LSP methods and commands tandem answers, by feature
- `stdio`           the stdio message loop (every request answered, whatever the input)
- `framing`         base-protocol framing of the client's byte stream
- `documents`       the open documents, one line buffer each
- `positions`       the one position codec (client columns in the negotiated encoding <-> code points)
- `requests`        what the model side is asked, built from an open document
- `status`          the `tandem/status` notification's one typed shape
- `shown`           text shown to a person, its control characters escaped
- `config_loading`  the configuration layers (files, initializationOptions, didChangeConfiguration)
- `edit_workspace`  the workspace as one edit sees it (paths, texts, versions, the `WorkspaceEdit`)
- `edit_report`     the message the user reads when an edit ends
- `client_log`      log records as window/logMessage (`tandem serve --log-to-client`)
- `loop_watch`      watching the event loop for whatever holds it
- `heap`            giving the C heap's free pages back to the system
"""

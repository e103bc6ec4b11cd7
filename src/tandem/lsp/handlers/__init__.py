"""LSP handlers by feature: lifecycle and configuration, documents, completion."""

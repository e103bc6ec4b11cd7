/**
 * Where the cursor rests: when the user focuses an editor or places its cursor (mouse or keys) and it rests
 * there for `REST_MS` without typing, the server is told (`tandem/warm`). A model on the user's machine reads
 * the prompt at that place meanwhile, so the file's first key is answered without waiting for the file's first
 * read (1.5-3 s on one core for a small model). The server ignores it for a cloud model, and typing itself
 * needs no help: each key asks for a completion.
 */

import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";

export const WARM_METHOD = "tandem/warm";
// A cursor passing through (held arrow keys, a click on the way to a drag) is not worth a prompt.
const REST_MS = 300;

export class Warm implements vscode.Disposable {
  private timer: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly client: () => LanguageClient | undefined) {
    this.subscriptions = [
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor !== undefined) {
          this.schedule(editor);
        }
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        const kind = event.kind;
        if (kind === vscode.TextEditorSelectionChangeKind.Mouse || kind === vscode.TextEditorSelectionChangeKind.Keyboard) {
          this.schedule(event.textEditor);
        }
      }),
      // Typing: its own completion requests read the prompt.
      vscode.workspace.onDidChangeTextDocument(() => clearTimeout(this.timer)),
    ];
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const item of this.subscriptions) {
      item.dispose();
    }
  }

  private schedule(editor: vscode.TextEditor): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.send(editor), REST_MS);
  }

  private send(editor: vscode.TextEditor): void {
    const client = this.client();
    if (client === undefined || editor !== vscode.window.activeTextEditor || !editor.selection.isEmpty) {
      return;
    }
    const at = editor.selection.active;
    void client.sendNotification(WARM_METHOD, {
      textDocument: { uri: client.code2ProtocolConverter.asUri(editor.document.uri) },
      position: { line: at.line, character: at.character },
    });
  }
}

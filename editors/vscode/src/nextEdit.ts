/**
 * Next-edit suggestions: after the user changes a document, tandem predicts the next change nearby
 * (`textDocument/copilotInlineEdit`). It is shown as an inline edit at its place (the replaced text struck
 * through, the new text after it) or, when it is off screen, as a jump marker at the cursor. Tab jumps to an
 * off-screen edit, then applies it, with VS Code's word list open or not; Escape dismisses it. An edit is applied only to the document version it
 * was computed for: if the document changed since, it is dropped, never applied over newer text.
 */

import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";

import { lineParts } from "./nextEditView";

export const ACCEPT_COMMAND = "tandem.acceptNextEdit";
export const DISMISS_COMMAND = "tandem.dismissNextEdit";
const METHOD = "textDocument/copilotInlineEdit";
const DID_SHOW = "textDocument/didShowInlineEdit";
const DISMISSED = "tandem.nextEditDismissed";
const VISIBLE_CONTEXT = "tandem.nextEditVisible";
// Set from an accepted next edit until the user types or moves: Tab still belongs to the chain of next edits
// (it takes the next one, or says there is none), never indents the middle of the line the edit left.
const CHAIN_CONTEXT = "tandem.nextEditChain";
const CHAIN_END_MESSAGE_MS = 3000;
// Wait this long after the last change before asking (the server also waits for a pause in the typing).
const DEBOUNCE_MS = 75;

interface LspPosition {
  line: number;
  character: number;
}

interface InlineEdit {
  text: string;
  textDocument: { uri: string; version: number };
  range: { start: LspPosition; end: LspPosition };
  command?: { title: string; command: string; arguments?: unknown[] };
}

interface Shown {
  editor: vscode.TextEditor;
  edit: InlineEdit;
  range: vscode.Range;
  jumped: boolean;
}

export class NextEdits implements vscode.Disposable {
  private readonly deleted = vscode.window.createTextEditorDecorationType({
    textDecoration: "line-through",
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
  });
  private readonly inserted = vscode.window.createTextEditorDecorationType({});
  private readonly marker = vscode.window.createTextEditorDecorationType({});
  private readonly subscriptions: vscode.Disposable[];
  private shown: Shown | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pending: vscode.CancellationTokenSource | undefined;
  private applying = false;
  private chain = false;
  /** The request for the next edit under way, if any (Tab after an accept waits for it). */
  private inflight: Promise<void> | undefined;

  constructor(private readonly client: () => LanguageClient | undefined) {
    this.subscriptions = [
      vscode.workspace.onDidChangeTextDocument((event) => this.onChange(event)),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        // The user moved the cursor (keys or mouse): Tab is theirs again.
        if (event.kind === vscode.TextEditorSelectionChangeKind.Keyboard || event.kind === vscode.TextEditorSelectionChangeKind.Mouse) {
          this.setChain(false);
        }
      }),
      vscode.commands.registerCommand(ACCEPT_COMMAND, () => this.accept()),
      vscode.commands.registerCommand(DISMISS_COMMAND, () => this.dismiss()),
    ];
  }

  dispose(): void {
    this.clear();
    clearTimeout(this.timer);
    this.pending?.cancel();
    for (const item of [...this.subscriptions, this.deleted, this.inserted, this.marker]) {
      item.dispose();
    }
  }

  /** The edit on screen, for tests and the status display. */
  current(): InlineEdit | undefined {
    return this.shown?.edit;
  }

  private onChange(event: vscode.TextDocumentChangeEvent): void {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || event.document !== editor.document || event.contentChanges.length === 0) {
      return;
    }
    this.clear();
    clearTimeout(this.timer);
    if (!this.applying) {
      this.setChain(false);
    }
    // An accepted edit asks at once: the server is already working on the next one.
    const delay = this.applying ? 0 : DEBOUNCE_MS;
    this.timer = setTimeout(() => {
      const asked = this.request(editor);
      this.inflight = asked;
      void asked.finally(() => {
        if (this.inflight === asked) {
          this.inflight = undefined;
        }
      });
    }, delay);
  }

  private setChain(on: boolean): void {
    if (this.chain !== on) {
      this.chain = on;
      void vscode.commands.executeCommand("setContext", CHAIN_CONTEXT, on);
    }
  }

  private async request(editor: vscode.TextEditor): Promise<void> {
    const client = this.client();
    if (client === undefined || editor.document.isClosed) {
      return;
    }
    this.pending?.cancel();
    const pending = new vscode.CancellationTokenSource();
    this.pending = pending;
    const document = editor.document;
    const version = document.version;
    const position = client.code2ProtocolConverter.asPosition(editor.selection.active);
    let result: { edits?: InlineEdit[] } | undefined;
    try {
      result = await client.sendRequest(
        METHOD,
        { textDocument: { uri: document.uri.toString(), version }, position },
        pending.token,
      );
    } catch {
      return; // cancelled by a newer change, or the server could not answer: nothing to show
    }
    const edit = result?.edits?.[0];
    // An answer for a version the document has left is never shown.
    if (edit === undefined || document.version !== version || edit.textDocument.version !== version) {
      return;
    }
    if (vscode.window.activeTextEditor !== editor) {
      return;
    }
    this.show(editor, edit, client.protocol2CodeConverter.asRange(edit.range));
    void client.sendNotification(DID_SHOW, { item: edit });
  }

  private show(editor: vscode.TextEditor, edit: InlineEdit, range: vscode.Range): void {
    this.shown = { editor, edit, range, jumped: false };
    this.render();
    void vscode.commands.executeCommand("setContext", VISIBLE_CONTEXT, true);
  }

  private render(): void {
    const shown = this.shown;
    if (shown === undefined) {
      return;
    }
    const { editor, edit, range } = shown;
    // Line by line: each replaced line struck through, what it becomes after it (nextEditView).
    const parts = lineParts(range.start, range.end, edit.text, (line) => editor.document.lineAt(line).text.length);
    editor.setDecorations(
      this.deleted,
      parts.filter((p) => p.strikeTo > p.strikeFrom).map((p) => new vscode.Range(p.line, p.strikeFrom, p.line, p.strikeTo)),
    );
    editor.setDecorations(
      this.inserted,
      parts
        .filter((p) => p.text !== "")
        .map((p) => ({
          range: new vscode.Range(p.line, p.strikeTo, p.line, p.strikeTo),
          renderOptions: {
            after: {
              contentText: p.text,
              color: new vscode.ThemeColor("editorGhostText.foreground"),
              backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
            },
          },
        })),
    );
    const visible = editor.visibleRanges.some((span) => span.contains(range.start));
    if (visible || shown.jumped) {
      editor.setDecorations(this.marker, []);
      return;
    }
    const line = editor.selection.active.line;
    editor.setDecorations(this.marker, [
      {
        range: editor.document.lineAt(line).range,
        renderOptions: {
          after: {
            contentText: `  ⇥ next edit at line ${range.start.line + 1} (Tab)`,
            color: new vscode.ThemeColor("editorCodeLens.foreground"),
          },
        },
      },
    ]);
  }

  private clear(): void {
    const shown = this.shown;
    this.shown = undefined;
    if (shown !== undefined) {
      for (const type of [this.deleted, this.inserted, this.marker]) {
        shown.editor.setDecorations(type, []);
      }
      void vscode.commands.executeCommand("setContext", VISIBLE_CONTEXT, false);
    }
  }

  /** Tab: jump to an off-screen edit, or apply the one in view (only at the version it was made for). */
  async accept(): Promise<boolean> {
    if (this.shown === undefined && this.chain) {
      // Tab right after an accepted edit: the next one may still be on its way.
      await this.inflight;
      if (this.shown === undefined) {
        // The chain has ended: say so, and leave the line as it is (the next Tab indents, as usual).
        this.setChain(false);
        vscode.window.setStatusBarMessage("tandem: no further next edit (Tab again to indent)", CHAIN_END_MESSAGE_MS);
        return false;
      }
    }
    const shown = this.shown;
    const client = this.client();
    if (shown === undefined || client === undefined) {
      return false;
    }
    const { editor, edit, range } = shown;
    if (editor.document.version !== edit.textDocument.version) {
      this.clear();
      return false;
    }
    // Tab takes the next edit over VS Code's word list (its keybinding wins while one is shown, as the
    // README says): the list, opened by the user's own typing, closes rather than stay over the edit.
    void vscode.commands.executeCommand("hideSuggestWidget");
    const visible = editor.visibleRanges.some((span) => span.contains(range.start));
    if (!visible && !shown.jumped) {
      shown.jumped = true;
      editor.selection = new vscode.Selection(range.start, range.start);
      editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      this.render();
      return true;
    }
    this.clear();
    this.applying = true;
    try {
      const applied = await editor.edit((builder) => builder.replace(range, edit.text), {
        undoStopBefore: true,
        undoStopAfter: true,
      });
      if (!applied) {
        return false;
      }
    } finally {
      this.applying = false;
    }
    const lines = edit.text.split("\n");
    const end =
      lines.length === 1
        ? range.start.translate(0, edit.text.length)
        : new vscode.Position(range.start.line + lines.length - 1, lines[lines.length - 1].length);
    editor.selection = new vscode.Selection(end, end);
    this.setChain(true);
    if (edit.command !== undefined) {
      void client.sendRequest("workspace/executeCommand", {
        command: edit.command.command,
        arguments: edit.command.arguments ?? [],
      });
    }
    return true;
  }

  /** Escape: hide the edit and tell the server it was turned down. */
  dismiss(): void {
    const shown = this.shown;
    const client = this.client();
    this.clear();
    if (shown?.edit.command !== undefined && client !== undefined) {
      void client.sendRequest("workspace/executeCommand", {
        command: DISMISSED,
        arguments: shown.edit.command.arguments ?? [],
      });
    }
  }
}

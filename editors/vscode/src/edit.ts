/**
 * "tandem: Edit selection...": asks for an instruction and sends `workspace/executeCommand` `tandem.edit`
 * with `{uri, range, instruction}`. The server answers by applying a `WorkspaceEdit` through
 * `workspace/applyEdit`, which the language client carries out, and says how the edit ended (the model,
 * the files, the size of the change) with `window/showMessage`; this module only asks and waits.
 */

import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient, type Range } from "vscode-languageclient/node";

export const EDIT_COMMAND = "tandem.edit";

/**
 * The single argument of `tandem.edit`. The language client sends pending changes before the request, so
 * the range is read against the text the user sees; typing after that is rebased around by the server.
 */
export interface EditArguments {
  uri: string;
  range: Range;
  instruction: string;
}

function serverOffersEdits(client: LanguageClient): boolean {
  return client.initializeResult?.capabilities.executeCommandProvider?.commands.includes(EDIT_COMMAND) ?? false;
}

/** The selection, or the cursor's whole line when nothing is selected. */
function targetRange(editor: vscode.TextEditor): vscode.Range {
  const selection = editor.selection;
  return selection.isEmpty ? editor.document.lineAt(selection.active.line).range : selection;
}

export async function editSelection(client: LanguageClient | undefined): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showInformationMessage("tandem: open a file and select the code to edit first.");
    return;
  }
  if (client === undefined) {
    return; // The controller already said why.
  }
  if (!serverOffersEdits(client)) {
    void vscode.window.showWarningMessage(
      "tandem: this version of the tandem server does not offer edits yet (no tandem.edit command). " +
        "Update tandem to use Edit selection.",
    );
    return;
  }
  const instruction = await vscode.window.showInputBox({
    title: "tandem: Edit selection",
    prompt: "What should change? The selection (or the current line) is rewritten; other files may change too.",
    placeHolder: "e.g. add type hints; handle the empty list; extract a function",
    ignoreFocusOut: true,
  });
  if (!instruction?.trim()) {
    return;
  }
  const document = editor.document;
  const args: EditArguments = {
    uri: client.code2ProtocolConverter.asUri(document.uri),
    range: client.code2ProtocolConverter.asRange(targetRange(editor)),
    instruction: instruction.trim(),
  };
  try {
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "tandem: editing…", cancellable: true },
      (_progress, token) =>
        client.sendRequest(ExecuteCommandRequest.type, { command: EDIT_COMMAND, arguments: [args] }, token),
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`tandem: the edit failed: ${message}`);
  }
}

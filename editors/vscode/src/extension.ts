/**
 * The tandem extension: starts the tandem language server (ghost-text completions come from the language
 * client's inline completion support) and adds a status item and three commands; where the cursor rests
 * before typing is told to the server (`warm`), for a model on the user's machine to read that prompt.
 */

import * as vscode from "vscode";

import { Controller, SHOW_MENU_COMMAND } from "./controller";
import { editSelection } from "./edit";
import { NextEdits } from "./nextEdit";
import { onDidChangeInterpreter } from "./pythonEnv";
import { REPORT_SCHEME, ReportDocuments, showLatencyReport } from "./report";
import { Warm } from "./warm";

let controller: Controller | undefined;

const MENU: ReadonlyArray<{ label: string; command: string }> = [
  { label: "$(edit) Edit selection...", command: "tandem.editSelection" },
  { label: "$(graph) Show latency report", command: "tandem.showLatencyReport" },
  { label: "$(debug-restart) Restart server", command: "tandem.restartServer" },
  { label: "$(output) Show output", command: "tandem.showOutput" },
];

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("tandem", { log: true });
  const reports = new ReportDocuments();
  const current = new Controller(output);
  controller = current;
  context.subscriptions.push(
    output,
    reports,
    current,
    new NextEdits(() => current.clientIfRunning()),
    new Warm(() => current.clientIfRunning()),
    vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports),
    vscode.commands.registerCommand("tandem.editSelection", () => editSelection(current.runningClient())),
    vscode.commands.registerCommand("tandem.showLatencyReport", async () =>
      showLatencyReport(await current.serverCommand(), reports),
    ),
    vscode.commands.registerCommand("tandem.restartServer", () => current.restart()),
    vscode.commands.registerCommand("tandem.showOutput", () => output.show()),
    vscode.commands.registerCommand(SHOW_MENU_COMMAND, async () => {
      const pick = await vscode.window.showQuickPick(MENU, { title: "tandem" });
      if (pick !== undefined) {
        await vscode.commands.executeCommand(pick.command);
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => current.onConfigurationChanged(event)),
    vscode.workspace.onDidGrantWorkspaceTrust(() => current.sendSettings()),
  );
  const interpreterListener = await onDidChangeInterpreter(() => void current.onInterpreterChanged());
  if (interpreterListener !== undefined) {
    context.subscriptions.push(interpreterListener);
  }
  void current.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

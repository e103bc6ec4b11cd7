/**
 * "tandem: Show latency report": runs `tandem trace report FILE` and shows its text in a read-only editor.
 */

import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";

import type { ServerCommand } from "./discovery";
import { tracePath } from "./tracePath";

export const REPORT_SCHEME = "tandem-report";
const REPORT_URI = vscode.Uri.from({ scheme: REPORT_SCHEME, path: "/tandem latency report.txt" });
const REPORT_TIMEOUT_MS = 60_000;

/** Holds the last report's text for the read-only document. */
export class ReportDocuments implements vscode.TextDocumentContentProvider {
  private text = "";
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(): string {
    return this.text;
  }

  async show(text: string): Promise<void> {
    this.text = text;
    this.changed.fire(REPORT_URI);
    const document = await vscode.workspace.openTextDocument(REPORT_URI);
    await vscode.window.showTextDocument(document, { preview: false });
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function run(command: string, args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: REPORT_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ ok: error === null, stdout: String(stdout), stderr: String(stderr) || String(error ?? "") });
    });
  });
}

export async function showLatencyReport(server: ServerCommand | undefined, documents: ReportDocuments): Promise<void> {
  if (server === undefined) {
    void vscode.window.showErrorMessage("tandem: cannot find the tandem executable to make the report.");
    return;
  }
  const file = tracePath({
    setting: vscode.workspace.getConfiguration("tandem").get<string>("trace.path") ?? "",
    env: process.env,
    home: os.homedir(),
  });
  try {
    await fs.access(file);
  } catch {
    void vscode.window.showInformationMessage(
      `tandem: no trace at ${file} yet. Use some completions first (and keep tandem.trace.enabled on).`,
    );
    return;
  }
  const result = await run(server.command, [...server.args, "trace", "report", file]);
  if (!result.ok) {
    void vscode.window.showErrorMessage(`tandem trace report failed: ${result.stderr.trim().split("\n").pop()}`);
    return;
  }
  await documents.show(result.stdout);
}

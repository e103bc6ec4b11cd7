/**
 * "tandem: Show latency report": runs `tandem trace report FILE... --html OUT` over the trace and its rotated
 * predecessors and shows the page (plots drawn by the server's report extra) in a webview; without that
 * extra, the text report in a read-only editor.
 */

import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";

import type { ServerCommand } from "./discovery";
import { tracePath } from "./tracePath";

export const REPORT_SCHEME = "tandem-report";
const REPORT_URI = vscode.Uri.from({ scheme: REPORT_SCHEME, path: "/tandem latency report.txt" });
const REPORT_TIMEOUT_MS = 60_000;
const REPORT_TITLE = "tandem latency report";
// Rotated trace files (trace.jsonl.1 is the newest of them); more than the server keeps by default.
const MAX_ROTATED = 9;

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

/** The trace and its rotated predecessors that exist, oldest first. */
async function traceFiles(file: string): Promise<string[]> {
  const files: string[] = [];
  for (let n = MAX_ROTATED; n >= 1; n--) {
    try {
      await fs.access(`${file}.${n}`);
      files.push(`${file}.${n}`);
    } catch {
      // not there: fewer rotations happened
    }
  }
  return [...files, file];
}

let panel: vscode.WebviewPanel | undefined;

function showPage(html: string): void {
  if (panel === undefined) {
    panel = vscode.window.createWebviewPanel("tandem.latencyReport", REPORT_TITLE, vscode.ViewColumn.Active, {
      // plotly draws the plots with the page's own inline script; the page loads nothing from elsewhere.
      enableScripts: true,
      localResourceRoots: [],
    });
    panel.onDidDispose(() => {
      panel = undefined;
    });
  }
  panel.webview.html = html;
  panel.reveal();
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
  const files = await traceFiles(file);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "tandem-report-"));
  const page = path.join(dir, "latency-report.html");
  try {
    const html = await run(server.command, [...server.args, "trace", "report", ...files, "--html", page]);
    if (html.ok) {
      showPage(await fs.readFile(page, "utf8"));
      return;
    }
    if (!html.stderr.includes("[report]")) {
      void vscode.window.showErrorMessage(`tandem trace report failed: ${html.stderr.trim().split("\n").pop()}`);
      return;
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
  // The server's install has no plotting extra: the text report, and how to get the plots.
  const result = await run(server.command, [...server.args, "trace", "report", ...files]);
  if (!result.ok) {
    void vscode.window.showErrorMessage(`tandem trace report failed: ${result.stderr.trim().split("\n").pop()}`);
    return;
  }
  await documents.show(result.stdout);
  void vscode.window.showInformationMessage(
    // tandem-lsp is not on PyPI: the extra is installed from the checkout tandem was installed from.
    "tandem: for the report with plots, install the report extra where tandem runs, from your tandem checkout: pip install -e '.[report]'",
  );
}

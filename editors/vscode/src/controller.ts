/**
 * The one LanguageClient: finds the server, starts it with the settings as initializationOptions, sends
 * setting changes as workspace/didChangeConfiguration, restarts it when the executable changes, and keeps
 * the status bar item in step with the client's state and the server's `tandem/status` notifications.
 */

import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CancellationToken,
  DidChangeConfigurationNotification,
  type Executable,
  LanguageClient,
  type LanguageClientOptions,
  MessageType,
  ResponseError,
  ShowMessageNotification,
  type ShowMessageParams,
  State,
  TransportKind,
} from "vscode-languageclient/node";

import { type Discovery, findServer, nodeProbe, notFoundMessage, pythonCandidates, type ServerCommand } from "./discovery";
import { activeInterpreter } from "./pythonEnv";
import { type ConfigTree, RESTART_SETTINGS, removedKeys, toServerSettings } from "./settings";
import { type ClientPhase, describeStatus, mergeStatus, type StatusParams } from "./status";
import { namesUnopened, openLabel, unopenedTargets } from "./unopened";

export const CLIENT_ID = "tandem";
export const STATUS_NOTIFICATION = "tandem/status";
export const SHOW_MENU_COMMAND = "tandem.showMenu";

function section(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(CLIENT_ID);
}

/** tandem's config tree from the current VS Code settings. */
export function currentServerSettings(): ConfigTree {
  const config = section();
  return toServerSettings((key) => config.get(key), vscode.workspace.isTrusted);
}

export class Controller implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private clientSubscriptions: vscode.Disposable[] = [];
  private discovery: Discovery | undefined;
  private sent: ConfigTree = {};
  private phase: ClientPhase = "stopped";
  private lastStatus: StatusParams | undefined;
  private problem: string | undefined;
  private starting: Promise<void> | undefined;
  private readonly statusItem: vscode.StatusBarItem;
  /** The files the last applied workspace edit changed that were not open before it. */
  private unopened: vscode.Uri[] = [];

  constructor(private readonly output: vscode.LogOutputChannel) {
    this.statusItem = vscode.window.createStatusBarItem("tandem.status", vscode.StatusBarAlignment.Right, 100);
    this.statusItem.name = "tandem";
    this.statusItem.command = SHOW_MENU_COMMAND;
    this.render();
    this.statusItem.show();
  }

  /** The running client, or undefined (with the reason shown to the user). */
  runningClient(): LanguageClient | undefined {
    if (this.client?.state === State.Running) {
      return this.client;
    }
    void vscode.window.showWarningMessage(this.problem ?? "tandem is not running yet.");
    return undefined;
  }

  /** The running client, or undefined, saying nothing (for work the user did not ask for). */
  clientIfRunning(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  /** The server command found by the last search (for `tandem trace report`). */
  async serverCommand(): Promise<ServerCommand | undefined> {
    if (this.discovery === undefined) {
      this.discovery = await this.discover();
    }
    return this.discovery.found ? this.discovery.server : undefined;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async restart(): Promise<void> {
    // A start in flight would otherwise finish after the stop with the old executable.
    await this.starting;
    await this.stop();
    this.discovery = undefined;
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const subscription of this.clientSubscriptions.splice(0)) {
      subscription.dispose();
    }
    if (client !== undefined) {
      try {
        await client.stop(2000);
      } catch (error) {
        this.output.warn(`stopping tandem: ${String(error)}`);
      }
      try {
        await client.dispose();
      } catch {
        // Already stopped: nothing left to release.
      }
    }
    this.setPhase("stopped");
  }

  /** Reacts to a settings change: restart for a new executable, else send the new tree. */
  async onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration(CLIENT_ID)) {
      return;
    }
    if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(`${CLIENT_ID}.${key}`))) {
      this.output.info("server settings changed: restarting tandem");
      await this.restart();
      return;
    }
    await this.sendSettings();
  }

  /** Sends the current settings, or restarts when one was cleared (see `removedKeys`). */
  async sendSettings(): Promise<void> {
    const next = currentServerSettings();
    if (JSON.stringify(next) === JSON.stringify(this.sent)) {
      return;
    }
    const client = this.client;
    if (client?.state !== State.Running) {
      return; // The next start sends them as initializationOptions.
    }
    const cleared = removedKeys(this.sent, next);
    if (cleared.length > 0) {
      this.output.info(`settings cleared (${cleared.join(", ")}): restarting tandem so its defaults apply`);
      await this.restart();
      return;
    }
    this.sent = next;
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: next });
  }

  /** The user picked another Python interpreter: search again unless tandem.serverPath decides. */
  async onInterpreterChanged(): Promise<void> {
    if (!(this.discovery?.found && this.discovery.server.source === "tandem.serverPath")) {
      await this.restart();
    }
  }

  dispose(): void {
    void this.stop();
    this.statusItem.dispose();
  }

  private async discover(): Promise<Discovery> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
    const interpreter = await activeInterpreter(folders[0]?.uri);
    const discovery = await findServer(
      {
        serverPath: section().get<string>("serverPath") ?? "",
        pythons: pythonCandidates({
          activeInterpreter: interpreter,
          virtualEnv: process.env.VIRTUAL_ENV,
          workspaceFolders: folders.map((f) => f.uri.fsPath),
          platform: process.platform,
          trusted: vscode.workspace.isTrusted,
        }),
        pathEnv: process.env.PATH ?? "",
        platform: process.platform,
        home: os.homedir(),
      },
      nodeProbe,
    );
    if (discovery.found) {
      const { command, args, source } = discovery.server;
      this.output.info(`found the server via ${source}: ${[command, ...args].join(" ")}`);
    }
    return discovery;
  }

  private async doStart(): Promise<void> {
    this.problem = undefined;
    this.setPhase("starting");
    this.discovery ??= await this.discover();
    if (!this.discovery.found) {
      this.fail(notFoundMessage(this.discovery), "not-found");
      return;
    }
    const client = this.createClient(this.discovery.server);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        this.fail(`tandem: the server did not start (${String(error)}). See the output for its messages.`, "stopped");
      }
    }
  }

  private createClient(server: ServerCommand): LanguageClient {
    const extraArgs = section().get<string[]>("serverArgs") ?? [];
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file");
    const executable: Executable = {
      command: server.command,
      // The client appends --stdio for TransportKind.stdio, which `tandem serve` accepts. The server's logs
      // come as window/logMessage at their own level: stderr lines would all read as errors here.
      args: [...server.args, "serve", "--log-to-client", ...extraArgs],
      transport: TransportKind.stdio,
      options: { cwd: folder?.uri.fsPath, env: process.env },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.output,
      initializationOptions: () => {
        this.sent = currentServerSettings();
        return this.sent;
      },
      middleware: {
        // VS Code shows tandem as ghost text; the same answer in the suggestion menu is opt-in.
        provideCompletionItem: (document, position, context, token, next) =>
          section().get<boolean>("completionMenu") ? next(document, position, context, token) : undefined,
        workspace: {
          // A file the edit changes that was not open stays unsaved in VS Code (below); it is saved before
          // the server hears the edit applied, so its message ("views.py ... not open") holds on disk.
          handleApplyEdit: async (params, next) => {
            const open = new Set(vscode.workspace.textDocuments.map((document) => document.uri.toString()));
            this.unopened = [];
            const result = await next(params, CancellationToken.None); // (the client passes no token)
            if (!(result instanceof ResponseError) && result.applied) {
              this.unopened = unopenedTargets(params, open, (uri) => vscode.Uri.parse(uri).toString()).map((uri) => vscode.Uri.parse(uri));
              await this.saveUnopened(this.unopened);
            }
            return result;
          },
        },
      },
    };
    const client = new LanguageClient(CLIENT_ID, "tandem", executable, clientOptions);
    this.clientSubscriptions.push(
      client.onDidChangeState((event) => {
        if (this.client !== client) {
          return;
        }
        if (event.newState === State.Running) {
          this.setPhase("running");
        } else if (event.newState === State.Starting) {
          this.setPhase("starting");
        } else {
          this.problem ??= "tandem stopped. Its messages are in the output (tandem: Show output).";
          this.setPhase("stopped");
        }
      }),
      client.onNotification(ShowMessageNotification.type, (params) => this.showServerMessage(params)),
      client.onNotification(STATUS_NOTIFICATION, (params: unknown) => {
        this.lastStatus = mergeStatus(this.lastStatus, params);
        this.render();
      }),
    );
    return client;
  }

  /**
   * Saves the files a workspace edit changed that were not open before it. VS Code saves a refactoring's
   * files only when it changes more than one (`files.refactoring.autoSave`), and leaves a single unopened
   * file dirty in a tab it opens itself; tandem follows the same setting for that file too.
   */
  private async saveUnopened(uris: vscode.Uri[]): Promise<void> {
    if (uris.length === 0 || vscode.workspace.getConfiguration("files").get<boolean>("refactoring.autoSave") === false) {
      return;
    }
    const wanted = new Set(uris.map((uri) => uri.toString()));
    const documents = vscode.workspace.textDocuments.filter((document) => wanted.has(document.uri.toString()));
    for (const document of documents) {
      if (document.isDirty && !(await document.save())) {
        this.output.warn(`tandem: could not save ${document.uri.fsPath} after the edit changed it`);
      }
    }
  }

  /**
   * The server's window/showMessage, as the language client shows it, except an edit's message that names
   * files not open: it gets a button that opens them, so VS Code shows it whole (it cuts a plain
   * notification to one line, and "not open" comes last).
   */
  private showServerMessage(params: ShowMessageParams): void {
    const show =
      params.type === MessageType.Error
        ? vscode.window.showErrorMessage
        : params.type === MessageType.Warning
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    const files = namesUnopened(params.message) ? this.unopened : [];
    if (files.length === 0) {
      void show(params.message);
      return;
    }
    this.unopened = [];
    const action = openLabel(files.map((uri) => path.basename(uri.fsPath)));
    void show(params.message, action).then(async (choice) => {
      if (choice === action) {
        for (const uri of files) {
          await vscode.window.showTextDocument(uri, { preview: false });
        }
      }
    });
  }

  private fail(message: string, phase: ClientPhase): void {
    this.problem = message;
    this.output.error(message);
    this.setPhase(phase);
    void vscode.window.showErrorMessage(message, "Open Settings", "Show Output").then((choice) => {
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "tandem.serverPath");
      } else if (choice === "Show Output") {
        this.output.show();
      }
    });
  }

  private setPhase(phase: ClientPhase): void {
    this.phase = phase;
    if (phase !== "running") {
      this.lastStatus = undefined;
    }
    this.render();
  }

  private render(): void {
    const view = describeStatus(this.phase, this.lastStatus, this.problem);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor =
      view.severity === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }
}

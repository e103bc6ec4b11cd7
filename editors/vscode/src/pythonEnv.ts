/**
 * The interpreter that VS Code's Python extension (ms-python.python) calls active, when it is installed.
 *
 * Only the two members of its public API that tandem needs are typed here.
 */

import * as vscode from "vscode";

interface EnvironmentPath {
  readonly id: string;
  readonly path: string;
}

interface ResolvedEnvironment {
  readonly executable: { readonly uri?: vscode.Uri };
}

interface PythonApi {
  readonly environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    readonly onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION = "ms-python.python";

async function pythonApi(): Promise<PythonApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION);
  if (extension === undefined) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    // A Python extension that fails to activate is the same, for tandem, as none: search elsewhere.
    return undefined;
  }
}

/** The active interpreter's executable for `resource`'s folder, if the Python extension knows one. */
export async function activeInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const environments = (await pythonApi())?.environments;
  if (environments === undefined) {
    return undefined;
  }
  try {
    const active = environments.getActiveEnvironmentPath(resource);
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath ?? active.path;
  } catch {
    return undefined;
  }
}

/** Calls `listener` when the user picks another interpreter; undefined without the Python extension. */
export async function onDidChangeInterpreter(listener: () => void): Promise<vscode.Disposable | undefined> {
  const environments = (await pythonApi())?.environments;
  return environments?.onDidChangeActiveEnvironmentPath(listener);
}

/**
 * Finding the tandem language server: the `tandem.serverPath` setting, else the active Python environment
 * (its `tandem` script, or `python -P -m tandem` when tandem-lsp is installed there: `-P` keeps the
 * workspace folder off `sys.path`, so nothing in the opened repository is imported), else `tandem` on PATH.
 *
 * A workspace the user has not trusted is someone else's code: its `.venv`, `venv` or any interpreter
 * inside it is never run (a cloned repository can ship an executable `.venv/bin/tandem`), and neither is
 * a relative PATH entry, which would resolve inside the workspace.
 *
 * Pure apart from `nodeProbe`: the search takes a `Probe`, so unit tests run it on a fake file system.
 */

import { execFile } from "node:child_process";
import { promises as fs, constants as fsConstants } from "node:fs";
import * as path from "node:path";

/** How to start the server: `command ...args serve [--stdio]`. */
export interface ServerCommand {
  command: string;
  /** Arguments before the `serve` subcommand (`["-P", "-m", "tandem"]` for a bare interpreter). */
  args: string[];
  /** Where it was found, in words ("tandem.serverPath", "the active Python environment", "PATH"). */
  source: string;
}

/** One Python interpreter worth looking in, and why. */
export interface PythonCandidate {
  python: string;
  label: string;
}

export interface DiscoveryInput {
  /** `tandem.serverPath`; empty when unset. */
  serverPath: string;
  /** Interpreters to look in, best first (see `pythonCandidates`). */
  pythons: PythonCandidate[];
  /** The PATH environment variable. */
  pathEnv: string;
  platform: NodeJS.Platform;
  /** The user's home directory, for a `~/` in `tandem.serverPath`. */
  home: string;
}

export interface Probe {
  isExecutable(file: string): Promise<boolean>;
  /** True when `python` can import the tandem-lsp distribution. */
  hasTandem(python: string): Promise<boolean>;
}

export type Discovery =
  | { found: true; server: ServerCommand; tried: string[] }
  | { found: false; tried: string[]; /** Set when the user's explicit choice is wrong. */ badSetting?: string };

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
  return platform === "win32" ? path.win32 : path.posix;
}

function expandHome(file: string, home: string, platform: NodeJS.Platform): string {
  if (file === "~") {
    return home;
  }
  if (file.startsWith("~/") || (platform === "win32" && file.startsWith("~\\"))) {
    return pathApi(platform).join(home, file.slice(2));
  }
  return file;
}

function scriptNames(platform: NodeJS.Platform): string[] {
  return platform === "win32" ? ["tandem.exe", "tandem.cmd", "tandem.bat"] : ["tandem"];
}

/** Where a Python environment keeps its console scripts, relative to its interpreter. */
function scriptsBeside(python: string, platform: NodeJS.Platform): string[] {
  const api = pathApi(platform);
  const dir = api.dirname(python);
  const dirs = platform === "win32" ? [dir, api.join(dir, "Scripts")] : [dir];
  return dirs.flatMap((d) => scriptNames(platform).map((name) => api.join(d, name)));
}

/**
 * Interpreters to search, best first and without repeats: the one VS Code's Python extension calls active,
 * an activated virtualenv ($VIRTUAL_ENV), and `.venv` / `venv` in each workspace folder.
 */
export function pythonCandidates(options: {
  activeInterpreter?: string;
  virtualEnv?: string;
  workspaceFolders: string[];
  platform: NodeJS.Platform;
  /** VS Code's workspace trust: false leaves out every interpreter inside a workspace folder. */
  trusted: boolean;
}): PythonCandidate[] {
  const api = pathApi(options.platform);
  const inEnv = (root: string): string =>
    options.platform === "win32" ? api.join(root, "Scripts", "python.exe") : api.join(root, "bin", "python");
  const out: PythonCandidate[] = [];
  const inWorkspace = (file: string): boolean =>
    options.workspaceFolders.some((folder) => {
      const relative = api.relative(folder, file);
      return relative === "" || !(relative.startsWith("..") || api.isAbsolute(relative));
    });
  const add = (python: string | undefined, label: string): void => {
    if (python && !out.some((c) => c.python === python) && (options.trusted || !inWorkspace(python))) {
      out.push({ python, label });
    }
  };
  add(options.activeInterpreter, "the active Python environment");
  if (options.virtualEnv) {
    add(inEnv(options.virtualEnv), "$VIRTUAL_ENV");
  }
  for (const folder of options.workspaceFolders) {
    for (const name of [".venv", "venv"]) {
      add(inEnv(api.join(folder, name)), `the workspace's ${name}`);
    }
  }
  return out;
}

/** Search for the server; `tried` lists every place looked, for the not-found message. */
export async function findServer(input: DiscoveryInput, probe: Probe): Promise<Discovery> {
  const api = pathApi(input.platform);
  const tried: string[] = [];

  const configured = input.serverPath.trim();
  if (configured) {
    const file = expandHome(configured, input.home, input.platform);
    if (await probe.isExecutable(file)) {
      return { found: true, server: { command: file, args: [], source: "tandem.serverPath" }, tried };
    }
    // An explicit choice that does not work is reported, not silently replaced by another tandem.
    tried.push(`tandem.serverPath (${file}: not an executable file)`);
    return { found: false, tried, badSetting: file };
  }

  for (const candidate of input.pythons) {
    for (const script of scriptsBeside(candidate.python, input.platform)) {
      if (await probe.isExecutable(script)) {
        return { found: true, server: { command: script, args: [], source: candidate.label }, tried };
      }
    }
    // An interpreter that does not exist (a workspace's .venv never made) was not a place to look: the
    // not-found message names only the ones that are there.
    if (!(await probe.isExecutable(candidate.python))) {
      continue;
    }
    if (await probe.hasTandem(candidate.python)) {
      return {
        found: true,
        server: { command: candidate.python, args: ["-P", "-m", "tandem"], source: candidate.label },
        tried,
      };
    }
    tried.push(`${candidate.label} (${candidate.python}: tandem-lsp not installed)`);
  }

  const separator = input.platform === "win32" ? ";" : ":";
  // A relative entry ("", ".", "node_modules/.bin") resolves against the server's directory: the workspace.
  for (const dir of input.pathEnv.split(separator).filter((d) => api.isAbsolute(d))) {
    for (const name of scriptNames(input.platform)) {
      const file = api.join(dir, name);
      if (await probe.isExecutable(file)) {
        return { found: true, server: { command: file, args: [], source: "PATH" }, tried };
      }
    }
  }
  tried.push("PATH (no tandem executable)");
  return { found: false, tried };
}

/** What the user reads when the server cannot be found. */
export function notFoundMessage(discovery: Discovery): string {
  if (discovery.found) {
    return "";
  }
  if (discovery.badSetting !== undefined) {
    return (
      `tandem: the setting tandem.serverPath points to ${discovery.badSetting}, which is not an executable ` +
      "file. Fix the path, or clear the setting to let tandem search the Python environment and PATH."
    );
  }
  return (
    "tandem: cannot find the tandem language server. Looked in: " +
    discovery.tried.join("; ") +
    ". Install it into your Python environment (pip install -e <tandem checkout>), or set tandem.serverPath " +
    "to the tandem executable."
  );
}

/** The real file system and interpreters. */
export const nodeProbe: Probe = {
  async isExecutable(file: string): Promise<boolean> {
    try {
      const stat = await fs.stat(file);
      if (!stat.isFile()) {
        return false;
      }
      // Windows has no execute bit; existence is the test there.
      await fs.access(file, process.platform === "win32" ? fsConstants.F_OK : fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
  hasTandem(python: string): Promise<boolean> {
    return new Promise((resolve) => {
      execFile(
        python,
        ["-P", "-c", "import importlib.metadata as m; m.version('tandem-lsp'); import tandem.cli"],
        { timeout: 15_000, windowsHide: true },
        (error) => resolve(error === null),
      );
    });
  },
};

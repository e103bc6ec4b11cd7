import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type DiscoveryInput, findServer, notFoundMessage, type Probe, pythonCandidates } from "../../src/discovery";

/** A fake file system: the executables that exist and the interpreters that have tandem-lsp. */
function probe(executables: string[], withTandem: string[] = []): Probe & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    isExecutable: async (file) => {
      asked.push(file);
      return executables.includes(file);
    },
    hasTandem: async (python) => withTandem.includes(python),
  };
}

function input(overrides: Partial<DiscoveryInput>): DiscoveryInput {
  return { serverPath: "", pythons: [], pathEnv: "", platform: "linux", home: "/home/u", ...overrides };
}

const venv = { python: "/w/.venv/bin/python", label: "the active Python environment" };

describe("findServer", () => {
  it("uses tandem.serverPath first, with ~ expanded", async () => {
    const result = await findServer(
      input({ serverPath: "~/bin/tandem", pythons: [venv], pathEnv: "/usr/bin" }),
      probe(["/home/u/bin/tandem", "/w/.venv/bin/tandem", "/usr/bin/tandem"]),
    );
    assert.deepEqual(result.found && result.server, {
      command: "/home/u/bin/tandem",
      args: [],
      source: "tandem.serverPath",
    });
  });

  it("reports a bad tandem.serverPath instead of falling back", async () => {
    const result = await findServer(
      input({ serverPath: "/nope/tandem", pathEnv: "/usr/bin" }),
      probe(["/usr/bin/tandem"]),
    );
    assert.equal(result.found, false);
    assert.match(notFoundMessage(result), /tandem\.serverPath points to \/nope\/tandem/);
  });

  it("prefers the tandem script beside the active interpreter", async () => {
    const result = await findServer(
      input({ pythons: [venv], pathEnv: "/usr/bin" }),
      probe(["/w/.venv/bin/python", "/w/.venv/bin/tandem", "/usr/bin/tandem"]),
    );
    assert.deepEqual(result.found && result.server, {
      command: "/w/.venv/bin/tandem",
      args: [],
      source: "the active Python environment",
    });
  });

  it("runs `python -P -m tandem` when the environment has tandem-lsp but no script", async () => {
    const result = await findServer(
      input({ pythons: [venv], pathEnv: "/usr/bin" }),
      probe(["/w/.venv/bin/python", "/usr/bin/tandem"], ["/w/.venv/bin/python"]),
    );
    assert.deepEqual(result.found && result.server, {
      command: "/w/.venv/bin/python",
      args: ["-P", "-m", "tandem"],
      source: "the active Python environment",
    });
  });

  it("never runs a tandem found through a relative PATH entry (it would be the workspace's)", async () => {
    const result = await findServer(
      input({ pathEnv: ".:node_modules/.bin:/opt/a" }),
      probe(["tandem", "node_modules/.bin/tandem", "/opt/a/tandem"]),
    );
    assert.deepEqual(result.found && result.server, { command: "/opt/a/tandem", args: [], source: "PATH" });
  });

  it("falls back to PATH, in PATH order, skipping empty entries", async () => {
    const result = await findServer(
      input({ pythons: [venv], pathEnv: "::/opt/a:/opt/b" }),
      probe(["/w/.venv/bin/python", "/opt/b/tandem", "/opt/a/tandem"]),
    );
    assert.deepEqual(result.found && result.server, { command: "/opt/a/tandem", args: [], source: "PATH" });
  });

  it("finds tandem.exe in Scripts on Windows", async () => {
    const result = await findServer(
      input({
        platform: "win32",
        pythons: [{ python: "C:\\Python311\\python.exe", label: "the active Python environment" }],
        pathEnv: "C:\\bin",
      }),
      probe(["C:\\Python311\\Scripts\\tandem.exe"]),
    );
    assert.equal(result.found && result.server.command, "C:\\Python311\\Scripts\\tandem.exe");
  });

  it("says everywhere it looked when nothing is found", async () => {
    const result = await findServer(input({ pythons: [venv], pathEnv: "/usr/bin" }), probe(["/w/.venv/bin/python"]));
    assert.equal(result.found, false);
    const message = notFoundMessage(result);
    assert.match(message, /cannot find the tandem language server/);
    assert.match(message, /the active Python environment \(\/w\/\.venv\/bin\/python: tandem-lsp not installed\)/);
    assert.match(message, /PATH \(no tandem executable\)/);
    assert.match(message, /tandem\.serverPath/);
  });

  it("names only the interpreters that exist (issue 28 item 7: a workspace's .venv and venv that were never made)", async () => {
    const workspace = [
      { python: "/w/.venv/bin/python", label: "the workspace's .venv" },
      { python: "/w/venv/bin/python", label: "the workspace's venv" },
      { python: "/usr/bin/python3", label: "the active Python environment" },
    ];
    const result = await findServer(input({ pythons: workspace, pathEnv: "/usr/bin" }), probe(["/usr/bin/python3"]));
    const message = notFoundMessage(result);
    assert.doesNotMatch(message, /\.venv|\bvenv\b/);
    assert.match(message, /the active Python environment \(\/usr\/bin\/python3: tandem-lsp not installed\)/);
  });
});

describe("pythonCandidates", () => {
  it("never offers an interpreter inside an untrusted workspace, even the active one", () => {
    const candidates = pythonCandidates({
      activeInterpreter: "/w/sub/.venv/bin/python",
      virtualEnv: "/envs/t",
      workspaceFolders: ["/w", "/other"],
      platform: "linux",
      trusted: false,
    });
    assert.deepEqual(
      candidates.map((c) => c.python),
      ["/envs/t/bin/python"],
    );
  });

  it("a sibling folder whose name starts like the workspace's is not inside it", () => {
    const candidates = pythonCandidates({
      activeInterpreter: "/w2/.venv/bin/python",
      workspaceFolders: ["/w"],
      platform: "linux",
      trusted: false,
    });
    assert.deepEqual(
      candidates.map((c) => c.python),
      ["/w2/.venv/bin/python"],
    );
  });

  it("orders active, $VIRTUAL_ENV, workspace .venv and venv, without repeats", () => {
    const candidates = pythonCandidates({
      activeInterpreter: "/w/.venv/bin/python",
      virtualEnv: "/envs/t",
      workspaceFolders: ["/w"],
      platform: "linux",
      trusted: true,
    });
    assert.deepEqual(
      candidates.map((c) => c.python),
      ["/w/.venv/bin/python", "/envs/t/bin/python", "/w/venv/bin/python"],
    );
    assert.equal(candidates[0].label, "the active Python environment");
  });

  it("uses Scripts\\python.exe on Windows", () => {
    const candidates = pythonCandidates({ workspaceFolders: ["C:\\w"], platform: "win32", trusted: true });
    assert.deepEqual(
      candidates.map((c) => c.python),
      ["C:\\w\\.venv\\Scripts\\python.exe", "C:\\w\\venv\\Scripts\\python.exe"],
    );
  });
});

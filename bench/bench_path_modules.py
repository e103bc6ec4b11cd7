"""The modules of the product one request passes through, counted by running it (no pass/fail).

`tandem serve` runs over stdio with a profiler (`sys.setprofile`, in every thread) that records the source
file of every product function that runs (under `lsp/`, `completion/` and `cache/` of the installed
package) from the moment the request's handler is first called until `shutdown`. The calls between product
modules are recorded too, and those that run backwards (from an inner layer to an outer one: `LAYERS`) are
listed. Two requests, each in its own server: one inline completion (`textDocument/inlineCompletion`, a
cache miss answered by the model) and one edit (`workspace/executeCommand tandem.edit`, the fast model's
answer applied). The models are the simulator on loopback (its answers are SIMULATED; only the code they
pass through is counted here), configured in the user's config.

What runs in the background meanwhile (the stream a completion keeps reading after its answer, the
status notification) is counted too: it is part of the request's work. The workspace holds two small files
and its scan ends before the request is sent.

    python bench/bench_path_modules.py [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import sys
import tempfile
from typing import Any

import httpx
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tandem.sim.runner import SimSettings, start_in_thread

# Run in the server's interpreter before `tandem serve`: record product files from the trigger on.
BOOT = r"""
import os, sys, threading, atexit
from tandem.cli import main
import tandem
root = os.path.dirname(tandem.__file__)
# Before the src layout the parts lived in top-level folders beside the command's; find them by module.
import tandem.lsp, tandem.completion, tandem.cache
parts = [os.path.dirname(m.__file__) + os.sep for m in (tandem.lsp, tandem.completion, tandem.cache)]
trigger, out = os.environ["PATH_TRIGGER"], os.environ["PATH_OUT"]
seen, state = set(), {"on": False}
def profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    if not state["on"]:
        if code.co_name == trigger:
            state["on"] = True
        else:
            return
    if code.co_name == "shutdown" and "lifecycle" in code.co_filename:
        state["on"] = False
        return
    name = product(code.co_filename)
    if name is None:
        return
    seen.add(name)
    caller = frame.f_back
    if caller is not None:
        source = product(caller.f_code.co_filename)
        if source is not None and source != name:
            calls.add(source + " -> " + name)
def product(name):
    for part in parts:
        if name.startswith(part):
            return os.path.basename(part.rstrip(os.sep)) + "/" + name[len(part):]
    return None
calls = set()
def dump():
    with open(out, "w") as f:
        f.write("\n".join(sorted(seen) + sorted(calls)))
atexit.register(dump)
import tandem.lsp.server as server_module
original_exit = os._exit
def exiting(code):
    dump()
    original_exit(code)
os._exit = exiting
sys.setprofile(profile)
threading.setprofile(profile)
sys.argv = ["tandem", "serve"]
main()
"""

SOURCE = 'def total(items):\n    result = 0\n    for item in items:\n        result += item\n    return result\n'
TYPED = SOURCE.replace("def total(items):", "def total(items: list[int]) -> int:")


async def one_request(kind: str, base_url: str, folder: pathlib.Path) -> list[str]:
    out = folder / f"{kind}.modules"
    workspace = folder / kind
    workspace.mkdir()
    (workspace / "invoice.py").write_text(SOURCE)
    (workspace / "other.py").write_text("from invoice import total\n\nprint(total([1, 2]))\n")
    home = folder / f"home-{kind}"
    (home / ".config" / "tandem").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "PATH_TRIGGER": "run_edit" if kind == "edit" else "inline_completion",
        "PATH_OUT": str(out),
        "PATH": "/usr/bin:/bin",
        # The server runs the tandem this bench imports (a worktree on PYTHONPATH, too).
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }
    client = LanguageClient("bench", "1")
    applied: list[Any] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    # The models go in the user's config: a workspace (initializationOptions) may not choose where code goes.
    (home / ".config" / "tandem" / "config.toml").write_text(
        "".join(
            f'[models.{tier}]\nprovider = "openai-chat"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
            for tier, model in (("fast", "sim-spark"), ("accurate", "sim-codex"))
        )
    )
    messages: list[str] = []

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(params: types.ShowMessageParams) -> None:
        if params.type in (types.MessageType.Error, types.MessageType.Warning):
            messages.append(params.message)

    await client.start_io(sys.executable, "-P", "-c", BOOT, env=env, cwd=str(workspace))
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
        )
    )
    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="w")],
        )
    )
    client.initialized(types.InitializedParams())
    uri = (workspace / "invoice.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)
        )
    )
    await asyncio.sleep(1.0)  # the scan of two files ends well within this
    if kind == "edit":
        argument = {
            "uri": uri,
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}},
            "instruction": "Add type hints.",
            "model": "fast",
        }
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="tandem.edit", arguments=[argument])
        )
    else:
        await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=1, character=4),
                context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
            )
        )
        await asyncio.sleep(0.5)  # the stream the answer came from ends (simulated answers are short)
    await client.shutdown_async(None)
    client.exit(None)
    process = client._server
    if process is not None:
        await asyncio.wait_for(process.wait(), 10)  # the server writes what it saw as it exits
    await client.stop()
    # A request that never reached a model (a refused setting, no model configured) walks a short path.
    if messages:
        raise SystemExit(f"{kind}: the server said {messages!r}; the walk would not be the request's")
    return out.read_text().split("\n") if out.exists() else []


# Layers, outermost first: a call from a module to one in an outer layer runs backwards (a callback, or a
# lower part that knows a higher one). Services every layer may use (observe, machine, cache) are last.
LAYERS = (
    ("lsp/",),
    ("completion/inline/", "completion/next_edit/", "completion/edit/", "completion/session.py"),
    ("completion/routing/", "completion/workspace.py", "completion/gate.py"),
    ("completion/providers/",),
    ("completion/config/", "completion/observe/", "completion/machine/", "cache/"),
)


def layer(module: str) -> int:
    return next((i for i, prefixes in enumerate(LAYERS) if module.startswith(prefixes)), len(LAYERS))


def walk(lines: list[str]) -> dict[str, Any]:
    """The modules run, the calls between them, and the calls that run backwards (inner layer to outer)."""
    modules = [line for line in lines if line and " -> " not in line]
    calls = [tuple(line.split(" -> ")) for line in lines if " -> " in line]
    backwards = [f"{a} -> {b}" for a, b in calls if layer(b) < layer(a)]
    return {"modules": modules, "calls": [f"{a} -> {b}" for a, b in calls], "backwards": backwards}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with start_in_thread(SimSettings(profile="spark", ttft_ms=5.0, tokens_per_s=50_000.0)) as sim:
        async with httpx.AsyncClient() as http:
            truth = {"files": {"invoice.py": TYPED}}
            (await http.post(f"{sim.root_url}/_sim/edit-truth", json=truth)).raise_for_status()
        with tempfile.TemporaryDirectory() as scratch:
            folder = pathlib.Path(scratch)
            results = {kind: walk(await one_request(kind, sim.base_url, folder)) for kind in ("inline", "edit")}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for kind, found in results.items():
        print(f"{kind}: {len(found['modules'])} product modules, {len(found['calls'])} calls between them")
        for name in found["modules"]:
            print(f"  {name}")
        print(f"  calls that run backwards (to an outer layer): {len(found['backwards'])}")
        for call in found["backwards"]:
            print(f"    {call}")


if __name__ == "__main__":
    asyncio.run(main())

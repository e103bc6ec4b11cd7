/**
 * Files a server's workspace edit changes that the editor did not have open.
 *
 * VS Code applies a workspace edit to such a file in a model of its own and leaves it unsaved (dirty): it
 * saves the files of a refactoring (`files.refactoring.autoSave`) only when the edit changes more than one
 * file, and then opens the dirty file as a background tab. An edit whose only change is to a file the user
 * had not open would so end with nothing on disk and a tab the user did not open. The controller saves the
 * files this module names once the edit is applied, under the same setting.
 *
 * The server's message then names such a file "not open" at its end, which VS Code cuts off in a one-line
 * notification ("edited views.py (+1 -0 lines, …"). A notification with a button is shown whole, so the
 * controller shows that message with a button that opens the files (`openLabel`).
 */

import type { ApplyWorkspaceEditParams } from "vscode-languageclient/node";

/**
 * The URIs (as the server sent them) of the files `params` writes or creates whose `canonical` form is not
 * in `open` (VS Code spells a URI its own way: compare `Uri.parse(uri).toString()`).
 */
export function unopenedTargets(
  params: ApplyWorkspaceEditParams,
  open: ReadonlySet<string>,
  canonical: (uri: string) => string = (uri) => uri,
): string[] {
  const targets = new Set<string>(Object.keys(params.edit.changes ?? {}));
  for (const change of params.edit.documentChanges ?? []) {
    if ("textDocument" in change) {
      targets.add(change.textDocument.uri);
    } else if (change.kind === "create") {
      targets.add(change.uri);
    }
  }
  return [...targets].filter((uri) => !open.has(canonical(uri)));
}

/** Whether a server message is an edit's message that names a file as not open. */
export function namesUnopened(message: string): boolean {
  return /\bnot open\)/.test(message);
}

/** The button of an edit's message that names files not open: "Open views.py", or "Open the 2 files". */
export function openLabel(names: readonly string[]): string {
  return names.length === 1 ? `Open ${names[0]}` : `Open the ${names.length} files`;
}

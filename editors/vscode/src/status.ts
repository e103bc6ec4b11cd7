/**
 * What the status bar item says: the client's state plus the server's last `tandem/status` notification.
 *
 * `tandem/status` (server -> client, after a completion request) is one shape, defined by the server
 * (`lsp/status.py`): it composes `text` (short, for the status bar: "tandem 42 ms fast", "tandem 3 ms
 * cached", "tandem ⚠ rate limited by the provider") and `tooltip` (a sentence). The extension shows those
 * and reads only `state` besides, so fields the server adds need no change here.
 *
 * Pure: no VS Code import, so unit tests can check every case.
 */

export interface StatusParams {
  state?: "ready" | "busy" | "error";
  text?: string;
  tooltip?: string;
}

export type ClientPhase = "starting" | "running" | "stopped" | "not-found";

export interface StatusView {
  text: string;
  tooltip: string;
  severity: "normal" | "warning" | "error";
}

/** The server's status from a notification: a new one replaces the last; ill-typed fields are dropped. */
export function mergeStatus(last: StatusParams | undefined, update: unknown): StatusParams {
  if (typeof update !== "object" || update === null) {
    return { ...last };
  }
  const u = update as Record<string, unknown>;
  const next: StatusParams = {};
  if (u.state === "ready" || u.state === "busy" || u.state === "error") {
    next.state = u.state;
  }
  if (typeof u.text === "string") {
    next.text = u.text;
  }
  if (typeof u.tooltip === "string") {
    next.tooltip = u.tooltip;
  }
  return next;
}

const COMMANDS_HINT = "(click for commands)";

/** The status item for a client phase, the server's last status, and a problem found by the extension. */
export function describeStatus(phase: ClientPhase, last?: StatusParams, problem?: string): StatusView {
  if (phase === "not-found" || (phase === "stopped" && problem)) {
    return { text: "$(error) tandem", tooltip: problem ?? "tandem is not running", severity: "error" };
  }
  if (phase === "stopped") {
    return { text: "$(circle-slash) tandem", tooltip: `tandem is stopped ${COMMANDS_HINT}`, severity: "warning" };
  }
  if (phase === "starting") {
    return { text: "$(loading~spin) tandem", tooltip: "tandem is starting", severity: "normal" };
  }
  if (!last?.text) {
    const busy = last?.state === "busy";
    return {
      text: busy ? "$(loading~spin) tandem" : "$(sparkle) tandem",
      tooltip: `tandem is ready: suggestions appear as ghost text, Tab accepts ${COMMANDS_HINT}`,
      severity: "normal",
    };
  }
  const error = last.state === "error";
  // Codicons are written $(name); the server's text is plain, so a "$(" in it is escaped.
  const text = last.text.replace(/\$\(/g, "\\$(");
  return {
    text: `${error ? "$(warning)" : "$(sparkle)"} ${text}`,
    tooltip: `${last.tooltip ?? last.text} ${COMMANDS_HINT}`,
    severity: error ? "warning" : "normal",
  };
}

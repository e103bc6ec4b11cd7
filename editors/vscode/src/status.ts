/**
 * What the status bar item says: the client's state plus the server's last `tandem/status` notification.
 *
 * `tandem/status` (server -> client notification; every field optional):
 *
 *     { "state": "ready" | "busy" | "error",
 *       "latency_ms": 84,            // last completion, request received -> answered, server time
 *       "route": "fast" | "accurate" | "cache",
 *       "model": "gpt-oss-120b",
 *       "cache_hit": true,
 *       "error": "fast model: 429 rate limited, retrying in 2 s" | null }   // null clears a shown error
 *
 * Pure: no VS Code import, so unit tests can check every case.
 */

export interface StatusParams {
  state?: "ready" | "busy" | "error";
  latency_ms?: number;
  route?: string;
  model?: string;
  cache_hit?: boolean;
  error?: string | null;
}

export type ClientPhase = "starting" | "running" | "stopped" | "not-found";

export interface StatusView {
  text: string;
  tooltip: string;
  severity: "normal" | "warning" | "error";
}

/** The last status merged with a new notification: fields the server leaves out keep their values. */
export function mergeStatus(last: StatusParams | undefined, update: unknown): StatusParams {
  const next: StatusParams = { ...last };
  if (typeof update !== "object" || update === null) {
    return next;
  }
  const u = update as Record<string, unknown>;
  if (u.state === "ready" || u.state === "busy" || u.state === "error") {
    next.state = u.state;
  }
  if (typeof u.latency_ms === "number" && Number.isFinite(u.latency_ms)) {
    next.latency_ms = u.latency_ms;
  }
  if (typeof u.route === "string") {
    next.route = u.route;
  }
  if (typeof u.model === "string") {
    next.model = u.model;
  }
  if (typeof u.cache_hit === "boolean") {
    next.cache_hit = u.cache_hit;
  }
  if (typeof u.error === "string" || u.error === null) {
    next.error = u.error;
  }
  return next;
}

function formatLatency(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** The status item for a client phase, the server's last status, and a problem found by the extension. */
export function describeStatus(phase: ClientPhase, last?: StatusParams, problem?: string): StatusView {
  if (phase === "not-found" || (phase === "stopped" && problem)) {
    return { text: "$(error) tandem", tooltip: problem ?? "tandem is not running", severity: "error" };
  }
  if (phase === "stopped") {
    return { text: "$(circle-slash) tandem", tooltip: "tandem is stopped (click for commands)", severity: "warning" };
  }
  if (phase === "starting") {
    return { text: "$(loading~spin) tandem", tooltip: "tandem is starting", severity: "normal" };
  }
  if (last?.error) {
    return { text: "$(warning) tandem", tooltip: `tandem: ${last.error}`, severity: "warning" };
  }
  if (last?.latency_ms === undefined) {
    const busy = last?.state === "busy";
    return {
      text: busy ? "$(loading~spin) tandem" : "$(sparkle) tandem",
      tooltip: "tandem is ready: completions appear as ghost text, Tab accepts (click for commands)",
      severity: "normal",
    };
  }
  const parts = [formatLatency(last.latency_ms)];
  if (last.cache_hit) {
    parts.push("cache");
  } else if (last.route) {
    parts.push(last.route);
  }
  const detail = [
    `last completion ${formatLatency(last.latency_ms)}`,
    last.route ? `route ${last.route}` : "",
    last.model ? `model ${last.model}` : "",
    last.cache_hit === undefined ? "" : last.cache_hit ? "cache hit" : "cache miss",
  ].filter((s) => s !== "");
  return {
    text: `$(sparkle) tandem ${parts.join(" ")}`,
    tooltip: `tandem: ${detail.join(", ")} (click for commands)`,
    severity: "normal",
  };
}

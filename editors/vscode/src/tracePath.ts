/**
 * Where the server writes its trace (the file "tandem: Show latency report" summarises).
 *
 * Mirrors completion/observe/trace.py `default_trace_path`: `tandem.trace.path` when set, else
 * `$XDG_STATE_HOME/tandem/trace.jsonl`, else `~/.local/state/tandem/trace.jsonl`. Pure.
 */

import * as path from "node:path";

export function tracePath(options: {
  setting: string;
  env: Record<string, string | undefined>;
  home: string;
}): string {
  const configured = options.setting.trim();
  if (configured) {
    return configured.startsWith("~/") ? path.join(options.home, configured.slice(2)) : configured;
  }
  const state = options.env.XDG_STATE_HOME || path.join(options.home, ".local", "state");
  return path.join(state, "tandem", "trace.jsonl");
}

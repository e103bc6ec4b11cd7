/**
 * VS Code settings -> tandem's configuration tree (the shape of completion/config/tree.py), sent to the server
 * as `initializationOptions` and with `workspace/didChangeConfiguration`.
 *
 * Pure: it reads settings through a function, so unit tests need no VS Code.
 */

/** A JSON object as tandem's config loader reads it (TOML table shape, snake_case keys). */
export type ConfigTree = { [key: string]: ConfigValue };
export type ConfigValue = string | number | boolean | string[] | ConfigTree;

/** Reads one setting below `tandem.` (e.g. `"models.fast.baseUrl"`); undefined when unset. */
export type SettingReader = (key: string) => unknown;

interface Mapping {
  /** Setting key below `tandem.`. */
  setting: string;
  /** Path in tandem's config tree. */
  path: readonly string[];
  kind: "string" | "int" | "number" | "boolean";
}

const MODEL_FIELDS: ReadonlyArray<[string, string, Mapping["kind"]]> = [
  ["provider", "provider", "string"],
  ["baseUrl", "base_url", "string"],
  ["model", "model", "string"],
  ["apiKeyEnv", "api_key_env", "string"],
  ["maxTokens", "max_tokens", "int"],
  ["timeoutS", "timeout_s", "number"],
];

/** Every setting the extension forwards, and where it lands in tandem's tree. */
export const SETTING_MAP: readonly Mapping[] = [
  ...(["fast", "accurate"] as const).flatMap((tier) =>
    MODEL_FIELDS.map(([setting, key, kind]) => ({
      setting: `models.${tier}.${setting}`,
      path: ["models", tier, key],
      kind,
    })),
  ),
  // FIM prompts are for completions, which only the fast model serves.
  { setting: "models.fast.fimTemplate", path: ["models", "fast", "fim_template"], kind: "string" },
  { setting: "completion.debounceMs", path: ["completion", "debounce_ms"], kind: "int" },
  { setting: "completion.multiline", path: ["completion", "multiline"], kind: "string" },
  { setting: "completion.deadlineS", path: ["completion", "deadline_s"], kind: "number" },
  { setting: "completion.maxLines", path: ["completion", "max_lines"], kind: "int" },
  { setting: "completion.prefixChars", path: ["completion", "prefix_chars"], kind: "int" },
  { setting: "completion.suffixChars", path: ["completion", "suffix_chars"], kind: "int" },
  { setting: "completion.fallbackToAccurate", path: ["completion", "fallback_to_accurate"], kind: "boolean" },
  { setting: "trace.path", path: ["trace", "path"], kind: "string" },
  { setting: "trace.enabled", path: ["trace", "enabled"], kind: "boolean" },
];

/** The `tandem.advanced` escape hatch: raw tree merged last. */
export const ADVANCED_SETTING = "advanced";

function accept(kind: Mapping["kind"], value: unknown): value is string | number | boolean {
  switch (kind) {
    // An empty string means "not set here": the server's own files and defaults decide.
    case "string":
      return typeof value === "string" && value.trim() !== "";
    case "int":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return typeof value === "boolean";
  }
}

function isTree(value: unknown): value is ConfigTree {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function setPath(tree: ConfigTree, path: readonly string[], value: ConfigValue): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (!isTree(next)) {
      node[key] = {};
    }
    node = node[key] as ConfigTree;
  }
  node[path[path.length - 1]] = value;
}

/** `over` merged into a copy of `base`; tables merge key by key, anything else replaces. */
export function deepMerge(base: ConfigTree, over: ConfigTree): ConfigTree {
  const out: ConfigTree = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isTree(value) && isTree(current) ? deepMerge(current, value) : value;
  }
  return out;
}

/**
 * tandem's config tree from VS Code settings: only settings the user set (non-empty, non-null) appear, so
 * the server's config files and defaults fill the rest. `trustWorkspace` is VS Code's workspace trust,
 * which the server honours as the user's permission for the workspace's tandem.toml to choose models.
 */
export function toServerSettings(read: SettingReader, trustWorkspace: boolean): ConfigTree {
  let tree: ConfigTree = {};
  for (const mapping of SETTING_MAP) {
    const value = read(mapping.setting);
    if (accept(mapping.kind, value)) {
      setPath(tree, mapping.path, typeof value === "string" ? value.trim() : value);
    }
  }
  const advanced = read(ADVANCED_SETTING);
  if (isTree(advanced)) {
    tree = deepMerge(tree, advanced);
  }
  tree.trust_workspace = trustWorkspace;
  return tree;
}

/** Dotted paths of the leaves of `tree` ("models.fast.base_url"). */
export function leafPaths(tree: ConfigTree, prefix = ""): string[] {
  return Object.entries(tree).flatMap(([key, value]) =>
    isTree(value) ? leafPaths(value, `${prefix}${key}.`) : [`${prefix}${key}`],
  );
}

/**
 * Leaves present in `before` and gone from `after`. The server keeps initializationOptions as a layer
 * below didChangeConfiguration, so a cleared setting would keep its initial value: the extension
 * restarts the server when this is non-empty.
 */
export function removedKeys(before: ConfigTree, after: ConfigTree): string[] {
  const now = new Set(leafPaths(after));
  return leafPaths(before).filter((path) => !now.has(path));
}

/** Settings whose change needs a new server process (and a new executable search). */
export const RESTART_SETTINGS: readonly string[] = ["serverPath", "serverArgs"];

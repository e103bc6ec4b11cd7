import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { deepMerge, leafPaths, removedKeys, SETTING_MAP, toServerSettings } from "../../src/settings";

function reader(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[key];
}

interface ConfigurationBlock {
  properties: Record<string, { default?: unknown }>;
}

function contributedSettings(): Record<string, { default?: unknown }> {
  // Compiled to out-test/test/unit/, so the package root is three levels up.
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "..", "package.json"), "utf8")) as {
    contributes: { configuration: ConfigurationBlock[] };
  };
  return Object.assign({}, ...manifest.contributes.configuration.map((block) => block.properties));
}

describe("toServerSettings", () => {
  it("sends nothing but workspace trust when no setting is set", () => {
    assert.deepEqual(toServerSettings(reader({}), false), { trust_workspace: false });
  });

  it("maps camelCase settings onto tandem's snake_case tree", () => {
    const tree = toServerSettings(
      reader({
        "models.fast.provider": "openai-chat",
        "models.fast.baseUrl": " http://127.0.0.1:8000/v1 ",
        "models.fast.model": "gpt-oss-120b",
        "models.fast.apiKeyEnv": "CEREBRAS_API_KEY",
        "models.fast.maxTokens": 128,
        "models.accurate.timeoutS": 60,
        "completion.debounceMs": 0,
        "completion.multiline": "never",
        "trace.path": "/tmp/t.jsonl",
        "trace.enabled": false,
      }),
      true,
    );
    assert.deepEqual(tree, {
      models: {
        fast: {
          provider: "openai-chat",
          base_url: "http://127.0.0.1:8000/v1",
          model: "gpt-oss-120b",
          api_key_env: "CEREBRAS_API_KEY",
          max_tokens: 128,
        },
        accurate: { timeout_s: 60 },
      },
      completion: { debounce_ms: 0, multiline: "never" },
      trace: { path: "/tmp/t.jsonl", enabled: false },
      trust_workspace: true,
    });
  });

  it("leaves out empty strings, nulls and values of the wrong type", () => {
    const tree = toServerSettings(
      reader({
        "models.fast.baseUrl": "",
        "models.fast.maxTokens": null,
        "models.fast.timeoutS": "10",
        "completion.debounceMs": 1.5,
        "completion.multiline": "",
        "trace.enabled": "yes",
      }),
      false,
    );
    assert.deepEqual(tree, { trust_workspace: false });
  });

  it("merges tandem.advanced last, table by table", () => {
    const tree = toServerSettings(
      reader({
        "models.fast.model": "small",
        advanced: { models: { fast: { temperature: 0.2 } }, completion: { max_lines: 3 } },
      }),
      false,
    );
    assert.deepEqual(tree, {
      models: { fast: { model: "small", temperature: 0.2 } },
      completion: { max_lines: 3 },
      trust_workspace: false,
    });
  });

  it("ignores a tandem.advanced that is not an object", () => {
    assert.deepEqual(toServerSettings(reader({ advanced: [1, 2] }), false), { trust_workspace: false });
  });
});

describe("package.json and SETTING_MAP", () => {
  const contributed = contributedSettings();

  it("declares every mapped setting", () => {
    for (const mapping of SETTING_MAP) {
      assert.ok(`tandem.${mapping.setting}` in contributed, `tandem.${mapping.setting} missing from package.json`);
    }
  });

  it("maps every declared model, completion and trace setting", () => {
    const mapped = new Set(SETTING_MAP.map((m) => `tandem.${m.setting}`));
    const shouldMap = Object.keys(contributed).filter(
      (key) => /^tandem\.(models|completion|trace)\./.test(key) && key !== "tandem.trace.server",
    );
    assert.ok(shouldMap.length > 10);
    for (const key of shouldMap) {
      assert.ok(mapped.has(key), `${key} is declared but never sent to the server`);
    }
  });

  it("has defaults that send nothing, so tandem's own config files decide", () => {
    const defaults: Record<string, unknown> = {};
    for (const [key, schema] of Object.entries(contributed)) {
      defaults[key.replace(/^tandem\./, "")] = schema.default;
    }
    // trace.enabled defaults to true in both places; everything else is unset.
    assert.deepEqual(toServerSettings(reader(defaults), false), { trace: { enabled: true }, trust_workspace: false });
  });
});

describe("removedKeys", () => {
  it("lists leaves that disappeared", () => {
    const before = { models: { fast: { base_url: "x", model: "m" } }, trust_workspace: true };
    const after = { models: { fast: { model: "m" } }, trust_workspace: true };
    assert.deepEqual(removedKeys(before, after), ["models.fast.base_url"]);
  });

  it("is empty when values only change or appear", () => {
    const before = { completion: { debounce_ms: 0 } };
    const after = { completion: { debounce_ms: 50, max_lines: 3 } };
    assert.deepEqual(removedKeys(before, after), []);
  });
});

describe("deepMerge and leafPaths", () => {
  it("replaces non-tables and merges tables", () => {
    assert.deepEqual(deepMerge({ a: { b: 1, c: 2 }, d: "x" }, { a: { c: 3 }, d: { e: true } }), {
      a: { b: 1, c: 3 },
      d: { e: true },
    });
  });

  it("does not change its inputs", () => {
    const base = { a: { b: 1 } };
    deepMerge(base, { a: { b: 2 } });
    assert.deepEqual(base, { a: { b: 1 } });
  });

  it("names leaves with dots", () => {
    assert.deepEqual(leafPaths({ a: { b: 1, c: { d: "x" } }, e: ["y"] }), ["a.b", "a.c.d", "e"]);
  });
});

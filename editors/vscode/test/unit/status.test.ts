import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { describeStatus, mergeStatus } from "../../src/status";
import { tracePath } from "../../src/tracePath";

describe("describeStatus", () => {
  it("shows an error with the problem as tooltip when the server is missing", () => {
    const view = describeStatus("not-found", undefined, "tandem: cannot find the tandem language server.");
    assert.equal(view.severity, "error");
    assert.equal(view.text, "$(error) tandem");
    assert.match(view.tooltip, /cannot find/);
  });

  it("spins while starting and says ready once running", () => {
    assert.match(describeStatus("starting").text, /loading~spin/);
    const ready = describeStatus("running");
    assert.equal(ready.text, "$(sparkle) tandem");
    assert.match(ready.tooltip, /ready/);
  });

  it("shows the last latency and the route, or cache on a hit", () => {
    const miss = describeStatus("running", { latency_ms: 84.4, route: "fast", model: "m", cache_hit: false });
    assert.equal(miss.text, "$(sparkle) tandem 84 ms fast");
    assert.match(miss.tooltip, /route fast, model m, cache miss/);
    assert.equal(describeStatus("running", { latency_ms: 1, route: "fast", cache_hit: true }).text, "$(sparkle) tandem 1 ms cache");
    assert.equal(describeStatus("running", { latency_ms: 1500 }).text, "$(sparkle) tandem 1.5 s");
  });

  it("warns with the server's error until it is cleared", () => {
    let status = mergeStatus(undefined, { latency_ms: 10, error: "fast model: 429" });
    assert.equal(describeStatus("running", status).severity, "warning");
    assert.match(describeStatus("running", status).tooltip, /429/);
    status = mergeStatus(status, { error: null, latency_ms: 12 });
    assert.equal(describeStatus("running", status).severity, "normal");
  });

  it("is a warning, not an error, when stopped without a problem", () => {
    assert.equal(describeStatus("stopped").severity, "warning");
    assert.equal(describeStatus("stopped", undefined, "crashed").severity, "error");
  });
});

describe("mergeStatus", () => {
  it("keeps fields the update leaves out and drops ill-typed ones", () => {
    const merged = mergeStatus({ route: "fast", latency_ms: 5 }, { latency_ms: "7", cache_hit: true, state: "odd" });
    assert.deepEqual(merged, { route: "fast", latency_ms: 5, cache_hit: true });
  });

  it("ignores a payload that is not an object", () => {
    assert.deepEqual(mergeStatus({ route: "fast" }, null), { route: "fast" });
  });
});

describe("tracePath", () => {
  it("uses the setting, with ~ expanded", () => {
    assert.equal(tracePath({ setting: "~/t.jsonl", env: {}, home: "/home/u" }), "/home/u/t.jsonl");
  });

  it("falls back to $XDG_STATE_HOME, then ~/.local/state, like the server", () => {
    assert.equal(tracePath({ setting: "", env: { XDG_STATE_HOME: "/s" }, home: "/h" }), "/s/tandem/trace.jsonl");
    assert.equal(tracePath({ setting: " ", env: {}, home: "/h" }), "/h/.local/state/tandem/trace.jsonl");
  });
});

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

  it("shows the server's own text, and its tooltip on hover", () => {
    const view = describeStatus("running", { state: "ready", text: "tandem 84 ms fast", tooltip: "Last suggestion in 84 ms." });
    assert.equal(view.text, "$(sparkle) tandem 84 ms fast");
    assert.equal(view.tooltip, "Last suggestion in 84 ms. (click for commands)");
    assert.equal(view.severity, "normal");
  });

  it("warns with the server's failure until a later status replaces it", () => {
    let status = mergeStatus(undefined, { state: "error", text: "tandem ⚠ rate limited", tooltip: "429", latency_ms: 3 });
    assert.equal(describeStatus("running", status).severity, "warning");
    assert.equal(describeStatus("running", status).text, "$(warning) tandem ⚠ rate limited");
    status = mergeStatus(status, { state: "ready", text: "tandem", tooltip: "No suggestion at the last request." });
    assert.equal(describeStatus("running", status).severity, "normal");
    assert.equal(describeStatus("running", status).text, "$(sparkle) tandem");
  });

  it("does not read the server's text as icons", () => {
    assert.equal(describeStatus("running", { text: "tandem $(x)" }).text, "$(sparkle) tandem \\$(x)");
  });

  it("is a warning, not an error, when stopped without a problem", () => {
    assert.equal(describeStatus("stopped").severity, "warning");
    assert.equal(describeStatus("stopped", undefined, "crashed").severity, "error");
  });
});

describe("mergeStatus", () => {
  it("replaces the last status and drops ill-typed fields", () => {
    const merged = mergeStatus({ text: "tandem 5 ms fast", state: "ready" }, { text: 7, tooltip: "t", state: "odd" });
    assert.deepEqual(merged, { tooltip: "t" });
  });

  it("ignores a payload that is not an object", () => {
    assert.deepEqual(mergeStatus({ text: "tandem" }, null), { text: "tandem" });
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

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { namesUnopened, openLabel, unopenedTargets } from "../../src/unopened";

const edit = (uri: string, version: number | null) => ({
  textDocument: { uri, version },
  edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "x" }],
});

describe("unopenedTargets", () => {
  it("names the files a versioned edit changes that are not open", () => {
    const params = { edit: { documentChanges: [edit("file:///w/models.py", 3), edit("file:///w/views.py", null)] } };
    assert.deepEqual(unopenedTargets(params, new Set(["file:///w/models.py"])), ["file:///w/views.py"]);
  });

  it("names a created file, and the files of plain changes", () => {
    const created = { edit: { documentChanges: [{ kind: "create" as const, uri: "file:///w/new.py" }, edit("file:///w/new.py", null)] } };
    assert.deepEqual(unopenedTargets(created, new Set()), ["file:///w/new.py"]);
    const plain = { edit: { changes: { "file:///w/a.py": [], "file:///w/b.py": [] } } };
    assert.deepEqual(unopenedTargets(plain, new Set(["file:///w/a.py"])), ["file:///w/b.py"]);
  });

  it("names nothing when every changed file is open", () => {
    const params = { edit: { documentChanges: [edit("file:///w/models.py", 3)] } };
    assert.deepEqual(unopenedTargets(params, new Set(["file:///w/models.py"])), []);
  });
});

describe("the message of an edit of files not open", () => {
  it("is recognised by the server's words for such a file", () => {
    assert.ok(namesUnopened("tandem: fast model (sim-spark) edited views.py (+1 -0 lines, not open)"));
    assert.ok(namesUnopened("tandem: accurate model (m) edited 2 files (+2 -0 lines): a.py (+1 -0), b.py (+1 -0, not open)"));
    assert.ok(!namesUnopened("tandem: fast model (sim-spark) edited edited.py (+1 -0 lines)"));
  });

  it("gets a button naming the file, or counting the files", () => {
    assert.equal(openLabel(["views.py"]), "Open views.py");
    assert.equal(openLabel(["a.py", "b.py"]), "Open the 2 files");
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { lineParts } from "../../src/nextEditView";

const lengths = (lines: string[]) => (line: number) => lines[line].length;

describe("lineParts", () => {
  it("shows what each line of a multi-line edit becomes", () => {
    const old = ['    """Area of a w by h rectangle."""', "    return w * h", ""];
    const parts = lineParts({ line: 0, character: 4 }, { line: 1, character: 16 }, '"""Area of a width by h rectangle."""\n    return width * h', lengths(old));
    assert.deepEqual(parts, [
      { line: 0, strikeFrom: 4, strikeTo: old[0].length, text: '"""Area of a width by h rectangle."""' },
      { line: 1, strikeFrom: 0, strikeTo: 16, text: "    return width * h" },
    ]);
  });

  it("puts lines beyond the old ones after the last, and strikes old lines with no new one", () => {
    const old = ["a = 1", "b = 2", "c = 3"];
    const more = lineParts({ line: 0, character: 0 }, { line: 0, character: 5 }, "a = 10\nb = 20", lengths(old));
    assert.deepEqual(more, [{ line: 0, strikeFrom: 0, strikeTo: 5, text: "a = 10 ⏎ b = 20" }]);
    const fewer = lineParts({ line: 0, character: 0 }, { line: 2, character: 5 }, "abc = 6", lengths(old));
    assert.deepEqual(fewer.map((p) => p.text), ["abc = 6", "", ""]);
    assert.deepEqual(fewer.map((p) => [p.strikeFrom, p.strikeTo]), [[0, 5], [0, 5], [0, 5]]);
  });

  it("leaves the line after whole replaced lines alone", () => {
    const old = ["x = 1", "y = 2", "z = 3"];
    const parts = lineParts({ line: 0, character: 0 }, { line: 2, character: 0 }, "x = 10\ny = 20\n", lengths(old));
    assert.deepEqual(parts.map((p) => [p.line, p.text]), [[0, "x = 10"], [1, "y = 20"]]);
  });
});

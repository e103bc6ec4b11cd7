/**
 * How a next edit is drawn, line by line: what each old line of the replaced range becomes. A multi-line
 * edit shows, after each replaced line's struck-through text, the new text of that line; new lines beyond
 * the old ones follow the last old line (joined with ⏎), and old lines with no new counterpart are struck
 * through with nothing after them. (VS Code's decorations cannot add lines to the editor, so extra lines
 * have to share the last one.)
 *
 * Pure: no VS Code import, so unit tests can check every case.
 */

export interface Point {
  line: number;
  character: number;
}

/** One line of the drawing: strike [`strikeFrom`, `strikeTo`) of `line`, then show `text` after `strikeTo`. */
export interface LinePart {
  line: number;
  strikeFrom: number;
  strikeTo: number;
  text: string;
}

export const NEW_LINE_MARK = " ⏎ ";

/**
 * The parts for replacing [`start`, `end`) by `newText`, given the length of every line the range touches
 * (`lineLength(line)`).
 */
export function lineParts(start: Point, end: Point, newText: string, lineLength: (line: number) => number): LinePart[] {
  const added = newText.split("\n");
  const oldCount = end.line - start.line + 1;
  const parts: LinePart[] = [];
  for (let k = 0; k < oldCount; k++) {
    const line = start.line + k;
    const strikeFrom = k === 0 ? start.character : 0;
    const strikeTo = k === oldCount - 1 ? end.character : lineLength(line);
    let text = k < added.length ? added[k] : "";
    if (k === oldCount - 1 && added.length > oldCount) {
      text = [text, ...added.slice(oldCount)].join(NEW_LINE_MARK);
    }
    parts.push({ line, strikeFrom, strikeTo, text });
  }
  // A range ending at the start of a line (whole lines replaced) whose text ends with a newline: that last
  // line is untouched, and the line before it carries no stray ⏎.
  const last = parts[parts.length - 1];
  if (parts.length > 1 && last.strikeFrom === 0 && last.strikeTo === 0 && last.text === "") {
    parts.pop();
  }
  return parts;
}

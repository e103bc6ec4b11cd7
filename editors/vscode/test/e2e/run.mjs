// The real-editor test: VS Code (code-server) in headless Chromium, with the tandem extension installed
// from the .vsix, the real `tandem serve`, and `tandem sim` answering with the true continuation of a real
// source file.
//
// It opens a copy of the file with its tail removed, types the first characters of the removed part, waits
// for tandem's ghost text, checks that it is the file's true continuation and that the status item shows
// the latency from the server's `tandem/status`, accepts it with Tab, saves, and checks the file on disk.
// Then an edit: it selects a function of a whole copy of the file, runs "tandem: Edit selection..." with
// an instruction, and checks that the saved file equals the simulators' edit truth (a second simulator
// stands in for the accurate model; both answer edits from that truth, errors off), and an edit whose truth
// changes only a file not open in the editor: the notification must name it "not open", and the file on
// disk must be the truth. Along the way: the
// ghost text sampled at every animation frame while the user types through it (it must never leave the
// screen; the frames a key that opens VS Code's word list costs are printed), the next line's ghost text
// after Tab at the end of a line, no code action on a bare line and the lightbulb on a selection, next
// edits near the cursor and off screen (a marker, Tab jumps, Tab applies). Screenshots go to
// test/e2e/artifacts/. Prints how long each step took.
//
//   node test/e2e/run.mjs      (after `npm run package` and test/e2e/install-code-server.sh)
//
// Environment (all optional):
//   TANDEM_CODE_SERVER   code-server executable      (default: .e2e-tools/node_modules/.bin/code-server)
//   TANDEM_CHROMIUM      Chromium executable         (default: /usr/bin/chromium)
//   TANDEM_VSIX          the packaged extension      (default: tandem.vsix)
//   TANDEM_PYTHON        Python that runs tandem     (default: python3)
//   TANDEM_E2E_TRUTH     source file to complete     (default: the Python standard library's textwrap.py)
//   TANDEM_E2E_SIM_TRUTH what the simulator indexes  (default: TANDEM_E2E_TRUTH; a directory works too)
//   TANDEM_E2E_ARTIFACTS screenshots and logs        (default: test/e2e/artifacts)
//   TANDEM_E2E_TIMEOUT_S longest wait for one step   (default: 90)
//   TANDEM_E2E_EDITOR_SETTINGS  more VS Code settings, as JSON (default: none; the editor's defaults)
//   TANDEM_E2E_WORKSPACE "untrusted": workspace trust on and the folder not trusted (Restricted Mode); the
//                        repository ships an executable .venv/bin/tandem and .venv/bin/python and a
//                        .vscode/settings.json naming them and an endpoint of its own. The user's tandem is
//                        on PATH, with no tandem.serverPath: the extension must start that one, run nothing
//                        of the workspace's, and complete from the user's model. (default: a trusted folder)
//   TANDEM_E2E_ONLY      one scenario, then stop: "autoclose" (issue 28 item 1: Tab after an auto-closed
//                        bracket), "wordlist-next-edit" (item 3: Tab with the word list open over a next
//                        edit), "blank-frames" (item 6: a figure, frames without ghost text over 100
//                        keys), "missing-binary" (item 7: no tandem to be found; the message names only
//                        the places looked in that exist) (default: every scenario; blank-frames and
//                        missing-binary only when named); only when named too, issue 36: "server-path"
//                        (item 6: tandem.serverPath changed in the user's settings while tandem runs),
//                        "outage" (items 9, 10: the status item while the fast model is down and back),
//                        "multi-line" (item 7: a next edit over two lines), "chain-end" (item 12: Tab after
//                        the last next edit), "word-list" (item 8: `_conv`, the word list and the ghost text)

import { execFileSync, spawn } from "node:child_process";
import {
  accessSync,
  chmodSync,
  constants as fsConstants,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const extensionDir = path.resolve(here, "..", "..");
const repoRoot = path.resolve(extensionDir, "..", "..");

const env = process.env;
const codeServer = env.TANDEM_CODE_SERVER ?? path.join(extensionDir, ".e2e-tools", "node_modules", ".bin", "code-server");
const chromium = env.TANDEM_CHROMIUM ?? "/usr/bin/chromium";
const vsix = path.resolve(env.TANDEM_VSIX ?? path.join(extensionDir, "tandem.vsix"));
const python = env.TANDEM_PYTHON ?? "python3";
const artifacts = path.resolve(env.TANDEM_E2E_ARTIFACTS ?? path.join(here, "artifacts"));
const stepTimeoutMs = Number(env.TANDEM_E2E_TIMEOUT_S ?? "90") * 1000;
const untrusted = env.TANDEM_E2E_WORKSPACE === "untrusted";
const only = env.TANDEM_E2E_ONLY ?? "";

/**
 * Whether the scenario `name` runs: all do unless TANDEM_E2E_ONLY names one; the untrusted run keeps to
 * what Restricted Mode changes (its server is whichever tandem the user's PATH finds).
 */
function runs(name) {
  return !untrusted && (only === "" || only === name);
}

/** Thrown when the scenario TANDEM_E2E_ONLY asked for has passed: the rest is skipped. */
class OnlyThisScenario extends Error {}

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

// Modules of the opened repository named like tandem's parts, and the marker each leaves if imported.
const HOSTILE_MODULES = ["cache.py", "lsp/__init__.py", "completion.py", "tandem/__init__.py"];
const HOSTILE_MARKER = "IMPORTED-FROM-THE-WORKSPACE";
// What an untrusted repository ships to be run instead of the user's tandem (each leaves a marker if run).
const HOSTILE_EXECUTABLES = [".venv/bin/tandem", ".venv/bin/python", "venv/bin/python"];
const RUN_MARKER = "RAN-FROM-THE-WORKSPACE";

/** Markers left in `dir` (recursively): workspace modules that ran. */
function markersIn(dir) {
  return readdirSync(dir, { recursive: true }).filter((name) => path.basename(String(name)).startsWith(HOSTILE_MARKER));
}

/** Files named `name` under `dir`, recursively. */
function filesNamed(dir, name) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((file) => path.basename(file) === name)
    .map((file) => path.join(dir, file));
}

const started = Date.now();
let stepStarted = started;
function step(name) {
  const now = Date.now();
  console.log(`[e2e] ${name}: ${((now - stepStarted) / 1000).toFixed(1)} s`);
  stepStarted = now;
}

function fail(message) {
  throw new Error(message);
}

for (const [what, file] of [
  ["code-server (run test/e2e/install-code-server.sh)", codeServer],
  ["Chromium (apt-get install chromium)", chromium],
  ["the .vsix (run npm run package)", vsix],
]) {
  if (!existsSync(file)) {
    fail(`missing ${what}: ${file}`);
  }
}

/** Starts `command` in its own process group; resolves with the first match of `pattern` in its output. */
function startAndWaitFor(command, args, options, pattern, what) {
  const child = spawn(command, args, { ...options, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const found = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start in time; output:\n${output}`)), stepTimeoutMs);
    const onData = (chunk) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before it was ready; output:\n${output}`));
    });
  });
  return { child, found, output: () => output };
}

function stopGroup(child) {
  if (child?.pid !== undefined && child.exitCode === null) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

/** Polls `condition` (a file on disk, not the page) every 100 ms until it is true. */
async function waitUntil(condition, what) {
  const deadline = Date.now() + stepTimeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      fail(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100)); // sleep-ok: polling a file on disk
  }
}

/**
 * The edit: a short top-level function of the truth (lines line1..line2, 1-based) and the whole file after
 * the edit, a comment inserted before the function's last line. Chosen by rule, so any version works.
 */
function chooseEdit(truth) {
  const lines = truth.split("\n");
  const tops = [...lines.keys()].filter((i) => /^[A-Za-z_@]/.test(lines[i]));
  tops.push(lines.length);
  for (let k = 0; k + 1 < tops.length; k++) {
    const start = tops[k];
    if (!lines[start].startsWith("def ")) {
      continue;
    }
    let end = tops[k + 1] - 1;
    while (end > start && lines[end].trim() === "") {
      end--;
    }
    if (end - start + 1 < 4 || end - start + 1 > 25) {
      continue;
    }
    const indent = lines[end].match(/^\s*/)[0];
    const after = [...lines.slice(0, end), `${indent}# Edited by tandem from VS Code.`, ...lines.slice(end)];
    return { line1: start + 1, line2: end + 1, after: after.join("\n") };
  }
  fail("the truth file has no short top-level function to edit");
}

/** The simulators' edit truth: {path as the server shows it (relative to the workspace): text after}. */
async function setEditTruth(simUrls, files) {
  for (const url of simUrls) {
    const response = await fetch(`${url.replace(/\/v1$/, "")}/_sim/edit-truth`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ files, errors: "off" }),
    });
    if (!response.ok) {
      fail(`the simulator refused the edit truth: ${response.status} ${await response.text()}`);
    }
  }
}

async function chord(page, modifier, key) {
  await page.keyboard.down(modifier);
  await page.keyboard.press(key);
  await page.keyboard.up(modifier);
}

/** Opens a workspace file with Quick Open (Ctrl+P), as a user would, and waits for its editor. */
async function quickOpen(page, name) {
  await chord(page, "Control", "KeyP");
  await page.waitForSelector(".quick-input-widget input");
  await page.keyboard.type(name);
  // Enter once the file's row is the focused one: with the row merely listed, Enter once left another file open.
  await page.waitForFunction(
    (wanted) => document.querySelector(".quick-input-list .monaco-list-row.focused")?.textContent?.includes(wanted),
    { polling: 100 },
    name,
  );
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (wanted) => document.querySelector(".tab.active")?.textContent?.includes(wanted),
    { polling: 100 },
    name,
  );
  await page.waitForSelector(".editor-instance .monaco-editor .view-lines .view-line");
}

/** Runs a Command Palette command by its title. */
async function runCommand(page, title) {
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input");
  await page.keyboard.type(title);
  await page.waitForFunction(
    (wanted) =>
      [...document.querySelectorAll(".quick-input-list .monaco-list-row")].some((r) => r.textContent.includes(wanted)),
    { polling: 100 },
    title.replace(/^tandem: /, ""),
  );
  await page.keyboard.press("Enter");
}

/** The truth file, and where to cut it: the start of the top-level `def` nearest three quarters in. */
async function setNextEditTruth(simUrl, files) {
  const response = await fetch(`${simUrl.replace(/\/v1$/, "")}/_sim/next-edit-truth`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ files }),
  });
  if (!response.ok) {
    fail(`the simulator refused the next-edit truth: ${response.status} ${await response.text()}`);
  }
}

/** Wait for a next edit rendered on the editor line containing `lineText`: a decoration whose text is `added`. */
async function waitForNextEdit(page, lineText, added) {
  await page.waitForFunction(
    ([want, text]) =>
      [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some(
        (line) =>
          line.textContent.replace(/\u00a0/g, " ").includes(want) &&
          [...line.querySelectorAll("span")].some((span) => getComputedStyle(span, "::after").content.includes(text)),
      ),
    { polling: 50 },
    [lineText, added],
  );
}

/** VS Code's own word list may open by itself while typing; it keeps Tab, so close it first (Escape). */
async function closeWordList(page) {
  if (await page.$(".editor-widget.suggest-widget.visible")) {
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !document.querySelector(".editor-widget.suggest-widget.visible"), { polling: 50 });
  }
}

/** The ghost text on screen: the innermost elements whose class names hold "ghost-text", in order. */
function ghostOnScreen() {
  return [...document.querySelectorAll(".monaco-editor [class*=ghost-text]")]
    .filter((el) => !el.querySelector("[class*=ghost-text]"))
    .map((e) => e.textContent)
    .join("")
    .replace(/\u00a0/g, " ");
}

/**
 * Starts sampling, at every animation frame, whether the ghost text on screen holds `tail` (tandem's
 * suggestion beyond what is typed), from the next key press on.
 */
async function startGhostSampler(page, tail) {
  await page.evaluate(
    (source, wanted) => {
      const ghost = new Function(`return (${source})()`);
      const sampler = { frames: [], keys: [], on: true, first: undefined };
      window.__tandemSampler = sampler;
      sampler.onKey = (event) => {
        sampler.first ??= performance.now();
        sampler.keys.push([performance.now(), event.key]);
      };
      document.addEventListener("keydown", sampler.onKey, { capture: true });
      const frame = () => {
        const text = ghost();
        const row = document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused");
        sampler.frames.push([performance.now(), text.includes(wanted), text, row ? row.getAttribute("aria-label") : null]);
        if (sampler.on) {
          requestAnimationFrame(frame);
        }
      };
      requestAnimationFrame(frame);
    },
    ghostOnScreen.toString(),
    tail,
  );
}

/**
 * `more` frames (ten), then stops the sampler. Returns the frames counted from the first key press (or, with
 * `fromShown`, from the first frame after it that showed the ghost text), how many of them lacked it, and
 * the longest run of frames without it, in ms.
 */
async function stopGhostSampler(page, { fromShown = false, more = 10 } = {}) {
  const mark = await page.evaluate(() => window.__tandemSampler.frames.length);
  await page.waitForFunction(
    (from, extra) => window.__tandemSampler.frames.length >= from + extra,
    { polling: "raf" },
    mark,
    more,
  );
  return page.evaluate((shown) => {
    const sampler = window.__tandemSampler;
    sampler.on = false;
    document.removeEventListener("keydown", sampler.onKey, { capture: true });
    let frames = sampler.frames.filter(([at]) => at >= sampler.first);
    if (shown) {
      const firstShown = frames.findIndex(([, present]) => present);
      frames = firstShown < 0 ? [] : frames.slice(firstShown);
    }
    let longest = 0;
    let blankFrom;
    let blank = 0;
    for (const [at, present] of frames) {
      if (!present) {
        blank++;
        blankFrom ??= at;
      } else if (blankFrom !== undefined) {
        longest = Math.max(longest, at - blankFrom);
        blankFrom = undefined;
      }
    }
    if (blankFrom !== undefined) {
      longest = Math.max(longest, frames.at(-1)[0] - blankFrom);
    }
    const span = frames.length > 1 ? frames.at(-1)[0] - frames[0][0] : 0;
    // What the screen held frame by frame, and the key presses, relative to the first key (ms).
    const zero = sampler.first ?? 0;
    const timeline = [
      ...sampler.keys.map(([at, key]) => `${(at - zero).toFixed(0)} key ${JSON.stringify(key)}`),
      ...frames.map(([at, present, text, row]) => `${(at - zero).toFixed(0)} ${present ? "ghost" : "BLANK"} ${JSON.stringify(text.slice(0, 40))} list=${row === null ? "-" : JSON.stringify(row.slice(0, 30))}`),
    ].sort((a, b) => parseFloat(a) - parseFloat(b));
    return { frames: frames.length, blank, longestMs: longest, frameMs: frames.length > 1 ? span / (frames.length - 1) : 0, timeline };
  }, fromShown);
}

/** `sampled` in words, for the log. */
function blankWords(sampled) {
  return (
    `ghost text missing in ${sampled.blank} of ${sampled.frames} frames, longest blank ` +
    `${sampled.longestMs.toFixed(1)} ms (a frame every ${sampled.frameMs.toFixed(1)} ms)`
  );
}

/**
 * Types `text` one key at a time, through the ghost text, sampling it at every frame (above): each key
 * waits for the editor line to show it and for the ghost text to hold `tail` again.
 */
async function typeThroughSampled(page, text, lineBefore, tail) {
  await startGhostSampler(page, tail);
  let line = lineBefore;
  for (const key of text) {
    line += key;
    await page.keyboard.type(key);
    await page.waitForFunction(
      (source, expected, wanted) => {
        const ghost = new Function(`return (${source})()`);
        const shown = [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((row) => {
          const copy = row.cloneNode(true);
          copy.querySelectorAll("[class*=ghost-text]").forEach((part) => part.remove());
          return copy.textContent.replace(/\u00a0/g, " ").endsWith(expected);
        });
        return shown && ghost().includes(wanted);
      },
      { polling: "raf" },
      ghostOnScreen.toString(),
      line.trimStart(),
      tail,
    );
  }
  return stopGhostSampler(page);
}

/** Whether VS Code's lightbulb is on screen in the editor. */
function lightbulbShown() {
  return [...document.querySelectorAll(".monaco-editor .lightBulbWidget")].some((el) => {
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    return style.display !== "none" && style.visibility !== "hidden" && box.width > 0 && box.height > 0;
  });
}

/**
 * A line for the end-of-line scenario: a code line `    name = value` (no strings or comments, used
 * once, brackets balanced) followed by a line of the same indentation. The file stops just after `name`;
 * the user types a space, then `= ` through the ghost text (keys that open no word list), and Tab takes
 * `value`. Returns where the file stops.
 */
function chooseLineCut(truth) {
  const lines = truth.split("\n");
  const counts = new Map();
  for (const line of lines) {
    counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  const starts = [0];
  for (const line of lines) {
    starts.push(starts.at(-1) + line.length + 1);
  }
  const depth = (text) => [...text].reduce((sum, c) => sum + ("([{".includes(c) ? 1 : ")]}".includes(c) ? -1 : 0), 0);
  const indent = (text) => /^\s*/.exec(text)[0];
  const picks = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    const line = lines[i];
    const match = /^(\s+[\w.]+)( = )(\w.{5,})$/.exec(line);
    const next = lines.slice(i + 1).find((later) => later.trim() !== "");
    if (!match || counts.get(line) !== 1 || /["'#\\]/.test(line) || /[:,]$/.test(line) || depth(match[3]) !== 0) {
      continue;
    }
    if (next === undefined || indent(next) !== indent(line)) {
      continue;
    }
    const [, head, through, value] = match;
    picks.push({ start: starts[i] + head.length, line, head, through, value, next });
  }
  if (picks.length === 0) {
    fail("the truth file has no `name = value` line for the end-of-line scenario");
  }
  return picks[Math.floor(picks.length / 2)];
}

// The off-screen next edit: `w` renamed on the def line, its one use many lines below.
const FAR_FILLER = Array.from({ length: 45 }, (_, i) => `    total += ${i + 1}\n`).join("");
const FAR_BEFORE = `def scale(w, factor):\n    total = 0\n${FAR_FILLER}    return w * factor + total\n`;
const FAR_TRUTH = FAR_BEFORE.replace("scale(w,", "scale(width,").replace("return w *", "return width *");
// The region a next edit may rewrite must reach that far below the cursor (a setting a user may change).
const FAR_REGION_BELOW = 60;

const AREA_BEFORE = 'def area(w, h):\n    """Area of a w by h rectangle."""\n    scale = 1\n    return w * h * scale\n';
const AREA_TRUTH = 'def area(width, h):\n    """Area of a width by h rectangle."""\n    scale = 1\n    return width * h * scale\n';

// Issue 36 item 12: the same rename (`w` -> `breadth`), to the chain's end and one Tab past it.
const BREADTH_TRUTH = AREA_BEFORE.replaceAll("(w,", "(breadth,").replace("a w by", "a breadth by").replace("return w *", "return breadth *");

// Issue 36 item 8: a name whose first letters start another word of the buffer (`_convert_for_comparison`):
// VS Code's word list opens and preselects that word while tandem's ghost text says `_convert(a)`.
const CONV_TYPED = "    return _conv";
const CONV_TRUTH =
  "def _convert_for_comparison(other):\n    return other\n\n\ndef compare(a, b):\n" +
  "    return _convert(a) == _convert(b)\n\n\ndef _convert(value):\n    return value\n";

// Issue 36 item 7: a rename whose next edit spans two lines (the docstring and the return line below it).
const BOX_BEFORE = 'def box(w, h):\n    """A w by h box."""\n    return (w, h)\n';
const BOX_TRUTH = BOX_BEFORE.replaceAll("w,", "width,").replace("A w by", "A width by");

// A rename whose new name (`s`) starts a word of the file (`same_area`): VS Code's word list offers it.
const RENAME_BEFORE = 'def area(w, h):\n    """Area of a w by h rectangle; see same_area."""\n    scale = 1\n    return w * h * scale\n';
const RENAME_TRUTH = RENAME_BEFORE.replace("area(w,", "area(s,").replace("a w by", "a s by").replace("return w *", "return s *");

// An edit asked on an open file whose truth changes only another file, on disk and not open in the editor.
const UNOPENED_MODELS = "def compute_total(invoice):\n    return sum(line.amount for line in invoice.lines)\n";
const UNOPENED_VIEWS = "from models import compute_total\n\n\ndef show(invoice):\n    return f'{compute_total(invoice)} €'\n";
const UNOPENED_TRUTH = UNOPENED_VIEWS.replace("def show(invoice):\n", 'def show(invoice):\n    """The invoice\'s total, in euros."""\n');

/**
 * The auto-closed bracket scenario: a top-level `def name(args):` line of the truth (textwrap's `def
 * wrap(text, width=70, **kwargs):`), the file cut just before its `(`. The user types `(`, VS Code inserts
 * `)` after the cursor, tandem's ghost text holds the rest of the line, `)` included; Tab must leave the
 * true line, not one ending `):)`.
 */
function chooseBracketCut(truth) {
  const match = /^def wrap\(.+\):$/m.exec(truth) ?? /^def \w+\([^()]+\):$/m.exec(truth);
  if (!match) {
    fail("the truth file has no top-level `def name(args):` line for the auto-closed bracket scenario");
  }
  const start = match.index + match[0].indexOf("(");
  return { start, line: match[0] };
}

function chooseCut(truth) {
  const defs = [...truth.matchAll(/^def [A-Za-z_]{3,}/gm)].map((m) => m.index);
  if (defs.length === 0) {
    fail("the truth file has no top-level def to complete");
  }
  const target = truth.length * 0.75;
  return defs.reduce((best, at) => (Math.abs(at - target) < Math.abs(best - target) ? at : best));
}

// What every run sets in VS Code: no tips, walkthroughs, updates or telemetry. The editor's own settings
// stay at their defaults (the word list opens as you type, Tab must still take tandem's suggestion); only
// the minimap goes, so screenshots show the code.
const QUIET_WORKBENCH = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "files.hotExit": "off",
  "files.autoSave": "off",
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "editor.minimap.enabled": false,
};

const work = mkdtempSync(path.join(tmpdir(), "tandem-vscode-e2e-"));
mkdirSync(artifacts, { recursive: true });
const dirs = Object.fromEntries(
  ["user-data", "extensions", "workspace", "bin", "xdg-config", "xdg-state", "logs"].map((name) => {
    const dir = path.join(work, name);
    mkdirSync(dir, { recursive: true });
    return [name, dir];
  }),
);
const serverLog = path.join(dirs.logs, "tandem-serve.log");
const traceFile = path.join(dirs.logs, "trace.jsonl");

let sim;
let accurateSim;
let server;
let browser;
let page;
let ok = false;

/**
 * code-server on the workspace folder, the .vsix installed and `settings` as the user's settings, and
 * Chromium on its workbench: sets `server`, `browser` and `page`, which `finally` closes.
 */
async function openWorkbench(settings, childEnv) {
  mkdirSync(path.join(dirs["user-data"], "User"), { recursive: true });
  writeFileSync(path.join(dirs["user-data"], "User", "settings.json"), JSON.stringify(settings, null, 2));
  const config = path.join(work, "code-server.yaml");
  writeFileSync(config, "bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n");
  const common = ["--config", config, "--user-data-dir", dirs["user-data"], "--extensions-dir", dirs.extensions];

  execFileSync(codeServer, [...common, "--install-extension", vsix], { env: childEnv, stdio: "pipe" });
  step("extension installed");

  server = startAndWaitFor(
    codeServer,
    [
      ...common,
      "--disable-telemetry",
      "--disable-update-check",
      ...(untrusted ? [] : ["--disable-workspace-trust"]),
      "--disable-getting-started-override",
      dirs.workspace,
    ],
    { env: childEnv, cwd: dirs.workspace },
    /HTTP server listening on (http:\/\/\S+?)\/?\s/,
    "code-server",
  );
  const serverUrl = await server.found;
  step(`code-server at ${serverUrl}`);

  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: CHROMIUM_ARGS,
    defaultViewport: { width: 1280, height: 800 },
  });
  page = await browser.newPage();
  page.setDefaultTimeout(stepTimeoutMs);
  await page.goto(`${serverUrl}/?folder=${encodeURIComponent(dirs.workspace)}`, { waitUntil: "domcontentloaded" });
  await page.waitForSelector(".monaco-workbench .part.statusbar");
  step("workbench loaded");
}

/** Whether `file` is an executable regular file, as the extension's search asks. */
function isExecutableFile(file) {
  try {
    accessSync(file, fsConstants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The "missing-binary" scenario (issue 28 item 7): no tandem anywhere the extension searches, in a trusted
 * workspace with neither .venv nor venv. No tandem.serverPath (a wrong one is reported as the setting alone,
 * without a search; the full run covers it), so the extension searches: the user's activated virtualenv,
 * which exists and lacks tandem-lsp, the workspace's .venv and venv, which do not exist, and PATH, which holds
 * no tandem. What the user is shown, the notification and the Output, must say tandem was not found, how to
 * install it or point at it, and name as looked in exactly the virtualenv and PATH, never the workspace's
 * .venv/bin/python or venv/bin/python. Screenshots and the text go to the artefacts.
 */
async function missingBinary() {
  if (untrusted) {
    // In Restricted Mode the workspace's interpreters are left out of the search whatever the fix.
    fail("the missing-binary scenario runs in a trusted workspace");
  }
  writeFileSync(path.join(dirs.workspace, "example.py"), "print('hello')\n");
  const workspacePythons = [".venv", "venv"].map((name) => path.join(dirs.workspace, name, "bin", "python"));
  // The user's activated virtualenv, without tandem-lsp: a place that exists and is looked in.
  const userEnv = path.join(work, "user-env");
  execFileSync(python, ["-m", "venv", "--without-pip", userEnv]);
  const userPython = path.join(userEnv, "bin", "python");
  // code-server's launcher needs node on PATH; it gets a folder of its own, as no PATH entry may hold a tandem.
  const nodeBin = path.join(work, "node-bin");
  mkdirSync(nodeBin);
  symlinkSync(process.execPath, path.join(nodeBin, "node"));
  const withoutTandem = (env.PATH ?? "")
    .split(path.delimiter)
    .filter((dir) => path.isAbsolute(dir) && !isExecutableFile(path.join(dir, "tandem")));
  const childEnv = {
    ...env,
    PATH: [nodeBin, ...withoutTandem].join(path.delimiter),
    VIRTUAL_ENV: userEnv,
    // Otherwise code-server gives the extension host the PATH of the user's login shell, which may find a
    // tandem (one installed with the machine's pip); VSCODE_CLI=1 is VS Code's "started from a terminal:
    // this environment is the user's", and it keeps the one above.
    VSCODE_CLI: "1",
    XDG_CONFIG_HOME: dirs["xdg-config"],
    XDG_STATE_HOME: dirs["xdg-state"],
  };
  const present = workspacePythons.map((file) => path.dirname(path.dirname(file))).filter((dir) => existsSync(dir));
  if (present.length > 0 || !isExecutableFile(userPython)) {
    fail(`the workspace holds ${JSON.stringify(present)}, or the user's virtualenv has no ${userPython}`);
  }

  await openWorkbench({ ...QUIET_WORKBENCH, "security.workspace.trust.enabled": false, "tandem.serverPath": "" }, childEnv);
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll(".statusbar-item")].some(
        (el) => /tandem\.status/.test(el.id) && el.querySelector(".codicon-error"),
      ),
    { polling: 100 },
  );
  const toastText = () =>
    [...document.querySelectorAll(".notification-toast .notification-list-item-message")]
      .map((el) => el.textContent)
      .find((text) => text.startsWith("tandem: cannot find")) ?? false;
  const shown = await (await page.waitForFunction(toastText, { polling: 100 })).jsonValue();
  console.log(`[e2e] the notification reads: ${JSON.stringify(shown)}`);
  // Expanded, as a user would to read it all (VS Code shows one line of it, cut with an ellipsis).
  const expand = await page.$(".notification-toast .codicon-notifications-expand");
  if (expand) {
    await expand.click();
    await page.waitForSelector(".notification-toast .notification-list-item.expanded");
  }
  // Screenshot once it has slid in (VS Code marks the end of that transition) and is whole on screen.
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll(".notification-toast.notification-fade-in-done")].some(
        (el) => el.textContent.includes("tandem: cannot find") && el.getBoundingClientRect().bottom <= window.innerHeight,
      ),
    { polling: 100 },
  );
  await page.screenshot({ path: path.join(artifacts, "missing-binary-notification.png") });

  // The notification's "Show Output" button: the tandem channel, its lines as the Output panel draws them.
  await page.evaluate(() =>
    [...document.querySelectorAll(".notification-toast .monaco-button")].find((el) => el.textContent === "Show Output").click(),
  );
  const outputShown = await (
    await page.waitForFunction(
      () => {
        const lines = [...document.querySelectorAll(".part.panel .monaco-editor .view-lines .view-line")]
          .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
          .map((line) => line.textContent.replace(/\u00a0/g, " "));
        return lines.some((line) => line.includes("tandem: cannot find")) ? lines.join("\n") : false;
      },
      { polling: 100 },
    )
  ).jsonValue();
  console.log(`[e2e] the Output panel reads: ${JSON.stringify(outputShown)}`);
  await page.screenshot({ path: path.join(artifacts, "missing-binary-output.png") });
  writeFileSync(
    path.join(artifacts, "missing-binary.txt"),
    `The notification:\n${shown}\n\nThe Output panel (tandem):\n${outputShown}\n`,
  );
  step("missing server: the notification and the Output captured");

  // (a) Not found, and what to do: install it, or set tandem.serverPath.
  if (
    !shown.startsWith("tandem: cannot find the tandem language server.") ||
    !/Install it into your Python environment \(pip install [^)]+\), or set tandem\.serverPath to the tandem executable\.$/.test(shown)
  ) {
    fail(`the notification does not say tandem was not found and how to install it or point at it: ${JSON.stringify(shown)}`);
  }
  const looked = /Looked in: (.*?)\. Install it/.exec(shown)?.[1].split("; ") ?? [];
  // (b) Never an interpreter that is not there.
  const absent = looked.filter(
    (place) => workspacePythons.some((file) => place.includes(file)) || /the workspace's \.?venv/.test(place),
  );
  if (absent.length > 0) {
    fail(`the places looked in name the workspace's .venv or venv, which do not exist: ${JSON.stringify(absent)}`);
  }
  // (c) Exactly the places that exist and were tried, in the order searched.
  const tried = [`$VIRTUAL_ENV (${userPython}: tandem-lsp not installed)`, "PATH (no tandem executable)"];
  if (JSON.stringify(looked) !== JSON.stringify(tried)) {
    fail(`the places looked in are ${JSON.stringify(looked)}, not the ones tried: ${JSON.stringify(tried)}`);
  }
  // (The panel wraps the line: its rows, joined, hold the message.)
  if (!outputShown.split("\n").join("").includes(`[error] ${shown}`)) {
    fail("the Output panel does not show the notification's message");
  }
  step(`missing server reported: not found, how to install, looked in ${JSON.stringify(looked)}`);
}

/** The status item's text and its tooltip (aria-label), or undefined while it is not on screen. */
async function statusItem() {
  return page.evaluate(() => {
    const item = [...document.querySelectorAll(".statusbar-item")].find((el) => /tandem\.status/.test(el.id));
    return item ? { text: item.textContent.trim(), label: item.getAttribute("aria-label") ?? "", error: Boolean(item.querySelector(".codicon-error")) } : undefined;
  });
}

/** Waits for a notification toast whose text includes `words`; returns its text. */
async function waitForToast(words) {
  return (
    await page.waitForFunction(
      (wanted) =>
        [...document.querySelectorAll(".notification-toast .notification-list-item-message")]
          .map((el) => el.textContent)
          .find((text) => text.includes(wanted)) ?? false,
      { polling: 100 },
      words,
    )
  ).jsonValue();
}

/** The status item's text once it matches `pattern` (a RegExp source), typing one more key each second it
 * does not (a key asks tandem again); fails after `keys` keys. */
async function typeUntilStatus(pattern, keys, what) {
  for (let i = 0; i < keys; i++) {
    await page.keyboard.type(i % 2 === 0 ? "x" : "y");
    try {
      const text = await (
        await page.waitForFunction(
          (source) => {
            const item = [...document.querySelectorAll(".statusbar-item")].find((el) => /tandem\.status/.test(el.id));
            const text = item?.textContent?.trim() ?? "";
            return new RegExp(source).test(text) ? text : false;
          },
          { polling: 50, timeout: 1000 },
          pattern,
        )
      ).jsonValue();
      return text;
    } catch (error) {
      if (error?.name !== "TimeoutError") {
        throw error;
      }
    }
  }
  fail(`the status item never showed ${what} in ${keys} keys`);
}

/** The status item's tooltip, as the user reads it: hover the item, read the hover. */
async function statusTooltip() {
  await page.mouse.move(0, 0);
  const item = await page.waitForSelector("[id='tandem.tandem.status'], .statusbar-item[id*='tandem.status']");
  await item.hover();
  return (
    await page.waitForFunction(
      () => {
        const hover = [...document.querySelectorAll(".monaco-hover, .workbench-hover, .custom-hover")].find((el) =>
          el.textContent.includes("tandem") || el.textContent.includes("Today"),
        );
        return hover ? hover.textContent : false;
      },
      { polling: 100 },
    )
  ).jsonValue();
}

/**
 * Issue 36 items 9 and 10 in the status item: the fast model goes down (the simulator answers 500 to every
 * request) while the user types: the status item must say the model is unreachable, not that there is
 * nothing to suggest; it comes back: the status item must say so ("✓ back"). Its tooltip counts the day's
 * spend in tokens (the models here have no prices), never "$0.00".
 */
async function outageScenario(simUrl, example) {
  await quickOpen(page, path.basename(example));
  await page.click(".editor-instance .monaco-editor .view-lines");
  await chord(page, "Control", "End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("# ");
  const root = simUrl.replace(/\/v1$/, "");
  const armed = await fetch(`${root}/_sim/faults`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ kind: "500" }),
  });
  if (!armed.ok) {
    fail(`the simulator refused the fault: ${armed.status}`);
  }
  const down = await typeUntilStatus("unreachable", 60, "the model unreachable");
  const downTip = await statusTooltip();
  console.log(`[e2e] fast model down: the status item reads ${JSON.stringify(down)}; its tooltip ${JSON.stringify(downTip)}`);
  await page.screenshot({ path: path.join(artifacts, "outage-status.png") });
  if (down !== "tandem ⚠ fast model unreachable" || /nothing useful/.test(downTip)) {
    fail(`while the model is down the status reads ${JSON.stringify(down)} / ${JSON.stringify(downTip)}`);
  }
  step("model down: the status item says the fast model is unreachable");
  await fetch(`${root}/_sim/faults`, { method: "DELETE" });
  const back = await typeUntilStatus("✓ back$", 60, "the model back");
  const backTip = await statusTooltip();
  console.log(`[e2e] fast model back: the status item reads ${JSON.stringify(back)}; its tooltip ${JSON.stringify(backTip)}`);
  await page.screenshot({ path: path.join(artifacts, "outage-back.png") });
  if (!/answering again/.test(backTip)) {
    fail(`after the outage the tooltip does not say the model is answering again: ${JSON.stringify(backTip)}`);
  }
  step("model back: the status item says so");
  const spend = /Today: ([^.]*)\./.exec(backTip)?.[1] ?? "";
  if (!/^[\d,]+ tokens spent \(no model has a price/.test(spend) || backTip.includes("$")) {
    fail(`the status tooltip does not count today's spend in tokens: ${JSON.stringify(backTip)}`);
  }
  step(`spend without prices: "${spend.split(" (")[0]}" in the status tooltip`);
  if (only === "outage") {
    throw new OnlyThisScenario();
  }
  await chord(page, "Control", "KeyZ");
}

/** The text of every next-edit decoration drawn after the editor line that holds `lineText` (ghost parts). */
async function nextEditTextOn(lineText) {
  return page.evaluate((want) => {
    const line = [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].find((row) =>
      row.textContent.replace(/\u00a0/g, " ").includes(want),
    );
    if (!line) {
      return null;
    }
    return [...line.querySelectorAll("span")]
      .map((span) => getComputedStyle(span, "::after").content)
      .filter((content) => content && content !== "none" && content !== "normal")
      .map((content) => JSON.parse(content))
      .join("");
  }, lineText);
}

/**
 * Issue 36 item 7: a next edit over two lines (`w` renamed `width` on the def line: the docstring and the
 * return line below change together). Each changed line must show what it becomes (it showed the first line
 * and "…(1 more lines)"); Tab applies it and the saved file is the truth.
 */
async function multiLineScenario(simUrl, file) {
  await setNextEditTruth(simUrl, { [path.basename(file)]: BOX_TRUTH });
  await quickOpen(page, path.basename(file));
  await chord(page, "Control", "Home");
  for (let i = 0; i < "def box(w".length; i++) {
    await page.keyboard.press("ArrowRight");
  }
  await page.keyboard.type("idth");
  // (The server sends the smallest range: from after `w` in the docstring to `(w` in the return line.)
  await waitForNextEdit(page, '"""A w by h box', "idth by h box");
  // (The whole edit is drawn in one render: both lines' decorations are there once the first is.)
  const docstring = await nextEditTextOn('"""A w by h box');
  const returned = await nextEditTextOn("return (w, h)");
  await page.screenshot({ path: path.join(artifacts, "next-edit-multi-line.png") });
  console.log(`[e2e] multi-line next edit: after the docstring ${JSON.stringify(docstring)}, after the return line ${JSON.stringify(returned)}`);
  if (!docstring?.includes('idth by h box."""') || !returned?.includes("return (width") || /more lines/.test(docstring + returned)) {
    fail(`a multi-line next edit does not show what each line becomes: ${JSON.stringify([docstring, returned])}`);
  }
  step("multi-line next edit: each line shows what it becomes");
  await closeWordList(page);
  await page.keyboard.press("Tab");
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((line) =>
        line.textContent.replace(/\u00a0/g, " ").includes("return (width, h)"),
      ),
    { polling: 50 },
  );
  await chord(page, "Control", "KeyS");
  await waitUntil(() => ![BOX_BEFORE, ""].includes(readFileSync(file, "utf8")), `${path.basename(file)} to be saved`);
  const saved = readFileSync(file, "utf8");
  if (saved !== BOX_TRUTH) {
    fail(`after the multi-line next edit the file is ${JSON.stringify(saved)}`);
  }
  step("multi-line next edit applied with Tab: the file equals the truth");
  if (only === "multi-line") {
    throw new OnlyThisScenario();
  }
}

/**
 * Issue 36 item 8, with the extension's defaults: the user types `_conv` (the last 4 keys of `return _conv`)
 * where the buffer's only word starting so is `_convert_for_comparison` and the file's truth is
 * `_convert(a) == _convert(b)`. tandem's ghost text must be on screen when the user stops typing and Tab
 * must insert it (VS Code's word list had preselected its word, hidden the ghost text, and Tab inserted the
 * list's word).
 */
async function wordListScenario(file, settings) {
  await quickOpen(page, path.basename(file));
  await page.click(".editor-instance .monaco-editor .view-lines");
  await chord(page, "Control", "End");
  await startGhostSampler(page, "ert(a) == _convert(b)");
  await page.keyboard.type("conv", { delay: 40 });
  // Until tandem's ghost text is on screen, or VS Code's list has a word selected that is not tandem's.
  const seen = await (
    await page.waitForFunction(
      (source) => {
        const ghost = new Function(`return (${source})()`)();
        const row = document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused .label-name");
        if (ghost.includes("ert(a) == _convert(b)")) {
          return { ghost, list: row?.textContent ?? "" };
        }
        return false;
      },
      { polling: "raf", timeout: 5000 },
      ghostOnScreen.toString(),
    ).catch(() => undefined)
  )?.jsonValue();
  const sampled = await stopGhostSampler(page, { fromShown: true, more: 20 });
  const list = await page.evaluate(
    () => document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused .label-name")?.textContent ?? "",
  );
  await page.screenshot({ path: path.join(artifacts, "word-list-conv.png") });
  console.log(
    `[e2e] typed "_conv": ghost ${JSON.stringify(seen?.ghost ?? "")}, word list ${list ? `open on ${JSON.stringify(list)}` : "closed"}; ` +
      `from the ghost's first frame: ${blankWords(sampled)}`,
  );
  await page.keyboard.press("Tab");
  await chord(page, "Control", "KeyS");
  const cut = readFileSync(file, "utf8");
  await waitUntil(() => readFileSync(file, "utf8") !== cut, "the saved file");
  const saved = readFileSync(file, "utf8");
  const line = saved.split("\n").find((l) => l.startsWith("    return _conv")) ?? "";
  console.log(`[e2e] after Tab the line reads ${JSON.stringify(line)}`);
  if (!line.startsWith("    return _convert(a) == _convert(b)")) {
    fail(`with the word list on _conv, Tab did not insert tandem's suggestion: ${JSON.stringify(line)}`);
  }
  if (sampled.blank > 0) {
    fail(`the ghost text left the screen after it was shown (${blankWords(sampled)})`);
  }
  step("word list and ghost text on _conv: the ghost text stays, Tab inserts it");
  throw new OnlyThisScenario();
}

/**
 * Issue 36 item 12: a chain of next edits to its end (`w` renamed `breadth` on the def line; Tab takes the
 * docstring's, Tab the return line's) and one more Tab, as a user does who expects one more: it must leave
 * the file as the chain left it (it inserted indentation where the last edit ended: `return breadth   * h`).
 */
async function chainEndScenario(simUrl, file) {
  await setNextEditTruth(simUrl, { [path.basename(file)]: BREADTH_TRUTH });
  await quickOpen(page, path.basename(file));
  await chord(page, "Control", "Home");
  for (let i = 0; i < "def area(w".length; i++) {
    await page.keyboard.press("ArrowRight");
  }
  await page.keyboard.press("Backspace");
  await page.keyboard.type("breadth");
  await waitForNextEdit(page, '"""Area of a w by h', "breadth");
  await closeWordList(page);
  await page.keyboard.press("Tab");
  await waitForNextEdit(page, "return w * h", "breadth");
  await closeWordList(page);
  await page.keyboard.press("Tab");
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((line) =>
        line.textContent.replace(/\u00a0/g, " ").includes("return breadth * h"),
      ),
    { polling: 50 },
  );
  step("next-edit chain applied to its end");
  // One Tab more, at once, where the last edit left the cursor (after `breadth`, mid-line).
  await page.keyboard.press("Tab");
  await chord(page, "Control", "KeyS");
  await waitUntil(() => ![AREA_BEFORE, ""].includes(readFileSync(file, "utf8")), `${path.basename(file)} to be saved`);
  const saved = readFileSync(file, "utf8");
  await page.screenshot({ path: path.join(artifacts, "next-edit-chain-end.png") });
  const status = await page.evaluate(() =>
    [...document.querySelectorAll(".statusbar-item")].map((el) => el.textContent.trim()).find((t) => t.startsWith("tandem: no further")) ?? "",
  );
  console.log(`[e2e] after the chain and one more Tab the return line reads ${JSON.stringify(saved.split("\n")[3])}; status bar: ${JSON.stringify(status)}`);
  if (saved !== BREADTH_TRUTH) {
    fail(`a Tab after the chain of next edits changed the file: ${JSON.stringify(saved)}`);
  }
  step("Tab after the chain's end: the file is as the chain left it");
  if (only === "chain-end") {
    throw new OnlyThisScenario();
  }
}

/**
 * The user's settings replaced by `settings`, as a user edits them: "Preferences: Open User Settings (JSON)",
 * select all, the new text, save (a write to the file from outside is not noticed by code-server).
 */
async function editUserSettings(settings) {
  await runCommand(page, "Preferences: Open User Settings (JSON)");
  await page.waitForFunction(() => document.querySelector(".tab.active")?.textContent?.includes("settings.json"), {
    polling: 100,
  });
  await page.click(".editor-instance .monaco-editor .view-lines");
  await chord(page, "Control", "KeyA");
  await page.keyboard.press("Delete");
  // One input event with the whole text: no auto-closed brackets or quotes are added.
  await page.keyboard.sendCharacter(JSON.stringify(settings));
  await chord(page, "Control", "KeyS");
  await page.waitForFunction(() => !document.querySelector(".tab.active.dirty"), { polling: 100 });
}

/**
 * Issue 36 item 6: tandem.serverPath changed while tandem runs, in the user's settings as a user does it
 * (Preferences: Open User Settings (JSON)), to a file that does not exist: the message must name the
 * setting and the file. Then the path is fixed there and "tandem: Restart server" run: tandem must run
 * again (the status item ready), without reloading the window.
 */
async function serverPathScenario(settings, tandem) {
  const missing = path.join(work, "moved-away", "tandem");
  await editUserSettings({ ...settings, "tandem.serverPath": missing });
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll(".statusbar-item")].some(
        (el) => /tandem\.status/.test(el.id) && el.querySelector(".codicon-error"),
      ),
    { polling: 100 },
  );
  const shown = await waitForToast("tandem");
  console.log(`[e2e] serverPath set to a missing file: the notification reads ${JSON.stringify(shown)}`);
  await page.screenshot({ path: path.join(artifacts, "server-path-missing.png") });
  if (!shown.includes(`tandem.serverPath points to ${missing}`)) {
    fail(`the message does not name tandem.serverPath and ${missing}: ${JSON.stringify(shown)}`);
  }
  step("serverPath changed to a missing file: the message names the setting and the file");
  await editUserSettings({ ...settings, "tandem.serverPath": tandem });
  // The settings change alone may restart it; the user also runs "Restart server", as the message suggests.
  await runCommand(page, "tandem: Restart server");
  const ready = await (
    await page.waitForFunction(
      () => {
        const item = [...document.querySelectorAll(".statusbar-item")].find((el) => /tandem\.status/.test(el.id));
        if (item?.querySelector(".codicon-sparkle")) {
          return "ready";
        }
        return false;
      },
      { polling: 100 },
    )
  ).jsonValue();
  await page.screenshot({ path: path.join(artifacts, "server-path-fixed.png") });
  // The server that runs is the one the fixed setting names (not another tandem the search found on PATH).
  const [outputLog] = filesNamed(path.join(dirs["user-data"], "logs"), "tandem.log");
  const starts = readFileSync(outputLog, "utf8").split("\n").filter((line) => / found the server via /.test(line));
  if (!starts.at(-1)?.endsWith(`found the server via tandem.serverPath: ${tandem}`)) {
    fail(`after the fix and the restart the server was not started from tandem.serverPath: ${JSON.stringify(starts)}`);
  }
  step(`serverPath fixed and tandem restarted: the status item is ${ready}, no reload`);
  if (only === "server-path") {
    throw new OnlyThisScenario();
  }
}

try {
  if (only === "missing-binary") {
    await missingBinary();
    throw new OnlyThisScenario();
  }
  // The truth: a real file nobody here wrote.
  const truthPath =
    env.TANDEM_E2E_TRUTH ?? execFileSync(python, ["-c", "import textwrap; print(textwrap.__file__)"]).toString().trim();
  const truth = readFileSync(truthPath, "utf8");
  const cut = chooseCut(truth);
  const typed = truth.slice(cut, cut + "def ".length + 2);
  const example = path.join(dirs.workspace, `example${path.extname(truthPath) || ".py"}`);
  writeFileSync(example, truth.slice(0, cut));
  // The repository's own modules named like tandem's parts: each leaves a marker if imported, which no
  // launch may do (the server starts in this folder).
  for (const name of HOSTILE_MODULES) {
    mkdirSync(path.dirname(path.join(dirs.workspace, name)), { recursive: true });
    writeFileSync(
      path.join(dirs.workspace, name),
      `import pathlib\npathlib.Path(__file__).with_name("${HOSTILE_MARKER}-" + pathlib.Path(__file__).stem).write_text(__name__)\n`,
    );
  }
  console.log(`[e2e] truth ${truthPath}, cut at ${cut}, will type ${JSON.stringify(typed)}`);

  if (untrusted) {
    // Each runs what it pretends to be after leaving its marker, so that a launch through it would work
    // and only the marker tells.
    for (const name of HOSTILE_EXECUTABLES) {
      const file = path.join(dirs.workspace, name);
      mkdirSync(path.dirname(file), { recursive: true });
      const real = path.basename(name) === "python" ? python : path.join(dirs.bin, "tandem");
      writeFileSync(file, `#!/bin/sh\ntouch "${work}/${RUN_MARKER}-${name.replaceAll("/", "_")}"\nexec "${real}" "$@"\n`);
      chmodSync(file, 0o755);
    }
    mkdirSync(path.join(dirs.workspace, ".vscode"), { recursive: true });
    writeFileSync(
      path.join(dirs.workspace, ".vscode", "settings.json"),
      JSON.stringify({
        "tandem.serverPath": path.join(dirs.workspace, ".venv", "bin", "tandem"),
        "tandem.models.fast.baseUrl": "http://127.0.0.1:9/v1",
        "tandem.trace.path": path.join(work, "planted-trace.jsonl"),
      }),
    );
  }

  const childEnv = {
    ...env,
    // The user's own tandem (the wrapper below) is on PATH; a trusted run names it in tandem.serverPath.
    PATH: [dirs.bin, env.PATH].filter(Boolean).join(path.delimiter),
    // The server must not read the developer's own tandem config or write into their state dir.
    XDG_CONFIG_HOME: dirs["xdg-config"],
    XDG_STATE_HOME: dirs["xdg-state"],
  };

  // The "word-list" scenario's file: the simulator knows its end, the workspace holds it cut at `_conv`.
  let simTruth = truthPath;
  const conv = path.join(dirs.workspace, "conv.py");
  if (only === "word-list") {
    simTruth = path.join(work, "sim-truth");
    mkdirSync(simTruth);
    copyFileSync(truthPath, path.join(simTruth, path.basename(truthPath)));
    writeFileSync(path.join(simTruth, "conv.py"), CONV_TRUTH);
    writeFileSync(conv, CONV_TRUTH.slice(0, CONV_TRUTH.indexOf(CONV_TYPED) + CONV_TYPED.length - 4));
  }
  sim = startAndWaitFor(
    python,
    ["-P", "-m", "tandem.sim", "--port", "0", "--profile", "spark", "--truth", env.TANDEM_E2E_SIM_TRUTH ?? simTruth],
    { env: childEnv, cwd: repoRoot },
    /listening on (http:\/\/\S+)/,
    "tandem sim",
  );
  // The accurate model answers only edits, from the edit truth: no need to wait at codex speed.
  accurateSim = startAndWaitFor(
    python,
    ["-P", "-m", "tandem.sim", "--port", "0", "--profile", "codex", "--ttft-ms", "50", "--tokens-per-s", "20000"],
    { env: childEnv, cwd: repoRoot },
    /listening on (http:\/\/\S+)/,
    "tandem sim (accurate)",
  );
  const [simUrl, accurateUrl] = await Promise.all([sim.found, accurateSim.found]);
  step(`simulators at ${simUrl} (fast) and ${accurateUrl} (accurate)`);

  const edit = chooseEdit(truth);
  const edited = path.join(dirs.workspace, `edited${path.extname(truthPath) || ".py"}`);
  writeFileSync(edited, truth);
  // The next edits' file is written before code-server starts too: Quick Open's file search can miss a file
  // written moments before it is asked (it answered "No matching results" for one, now and then).
  const area = path.join(dirs.workspace, "area.py");
  writeFileSync(area, AREA_BEFORE);
  writeFileSync(path.join(dirs.workspace, "rename.py"), RENAME_BEFORE);
  const box = path.join(dirs.workspace, "box.py");
  writeFileSync(box, BOX_BEFORE);
  const breadth = path.join(dirs.workspace, "breadth.py");
  writeFileSync(breadth, AREA_BEFORE);
  const far = path.join(dirs.workspace, "far.py");
  writeFileSync(far, FAR_BEFORE);
  // The unopened-file edit: models.py is opened, views.py only ever changes on disk.
  const models = path.join(dirs.workspace, "models.py");
  writeFileSync(models, UNOPENED_MODELS);
  const views = path.join(dirs.workspace, "views.py");
  writeFileSync(views, UNOPENED_VIEWS);
  // The end of a line: the file stops just after `name = ` of a line whose value the user will type.
  const lineCut = chooseLineCut(truth);
  const lineFile = path.join(dirs.workspace, `line${path.extname(truthPath) || ".py"}`);
  writeFileSync(lineFile, truth.slice(0, lineCut.start));
  const bracketCut = chooseBracketCut(truth);
  const bracketFile = path.join(dirs.workspace, `bracket${path.extname(truthPath) || ".py"}`);
  writeFileSync(bracketFile, truth.slice(0, bracketCut.start));
  await setEditTruth([simUrl, accurateUrl], { [path.basename(edited)]: edit.after });

  // What a user gets from `pip install -e .`: a `tandem` executable, here a wrapper around this checkout.
  const tandem = path.join(dirs.bin, "tandem");
  writeFileSync(tandem, `#!/bin/sh\nexec "${python}" -P -m tandem "$@"\n`);
  chmodSync(tandem, 0o755);

  const settings = {
    ...QUIET_WORKBENCH,
    // The untrusted run opens the folder in Restricted Mode without asking (as a user who declines).
    "security.workspace.trust.enabled": untrusted,
    ...(untrusted ? { "security.workspace.trust.startupPrompt": "never" } : {}),
    // TANDEM_E2E_EDITOR_SETTINGS: more VS Code settings (JSON), e.g. to measure editor.inlineSuggest.*.
    ...JSON.parse(env.TANDEM_E2E_EDITOR_SETTINGS ?? "{}"),
    ...(untrusted ? {} : { "tandem.serverPath": tandem }),
    "tandem.serverArgs": ["--log-file", serverLog, "-v"],
    "tandem.models.fast.provider": "openai-chat",
    "tandem.models.fast.baseUrl": simUrl,
    "tandem.models.fast.model": "sim-spark",
    "tandem.models.accurate.provider": "openai-chat",
    "tandem.models.accurate.baseUrl": accurateUrl,
    "tandem.models.accurate.model": "sim-codex",
    "tandem.completion.debounceMs": 0,
    "tandem.trace.path": traceFile,
    // The run asks for more suggestions in its minute than a user types: the speculation budget (next
    // edits count against it) would refuse the last ones, as designed, so it is raised here.
    "tandem.advanced": { next_edit: { region_below: FAR_REGION_BELOW }, prefetch: { tokens_per_minute: 200000 } },
  };
  await openWorkbench(settings, childEnv);

  // The extension's status item turns to the ready icon once `tandem serve` has answered initialize.
  const statusHandle = await page.waitForFunction(
    () => {
      const item = [...document.querySelectorAll(".statusbar-item")].find((el) => /tandem\.status/.test(el.id));
      if (!item) {
        return false;
      }
      if (item.querySelector(".codicon-error")) {
        return `error: ${item.getAttribute("aria-label")}`;
      }
      return item.querySelector(".codicon-sparkle") ? "ready" : false;
    },
    { polling: 100 },
  );
  const status = await statusHandle.jsonValue();
  if (status !== "ready") {
    fail(`the tandem status item shows ${status}`);
  }
  step("tandem server running (status item ready)");

  if (only === "server-path") {
    await serverPathScenario(settings, tandem);
  }
  if (only === "outage") {
    await outageScenario(simUrl, example);
  }
  if (only === "multi-line") {
    await multiLineScenario(simUrl, box);
  }
  if (only === "word-list") {
    await wordListScenario(conv, settings);
  }
  if (only === "chain-end") {
    await chainEndScenario(simUrl, breadth);
  }

  if (runs("autoclose")) {
    // Issue 28 item 1: `(` typed, VS Code auto-closes it, Tab takes tandem's suggestion without a stray `)`.
    await quickOpen(page, path.basename(bracketFile));
    await page.click(".editor-instance .monaco-editor .view-lines");
    await chord(page, "Control", "End");
    const bracketHead = bracketCut.line.slice(0, bracketCut.line.indexOf("(") + 1);
    // Now and then no frame shows VS Code's `)` on its own (the ghost text, which may cover it, is already
    // there, or VS Code did not close the bracket: the screen cannot tell). The scenario needs to see it, so
    // the `(` is taken back (Backspace, which takes an auto-closed pair with it) and typed again.
    let typedLine = "";
    let autoClosed = "";
    let bracketGhost = "";
    let drawn = "";
    for (let attempt = 1; attempt <= 5 && autoClosed === ""; attempt++) {
      if (attempt > 1) {
        await closeWordList(page);
        await page.keyboard.press("Backspace");
        await page.waitForFunction(
          (head) =>
            ![...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((row) =>
              row.textContent.replace(/\u00a0/g, " ").startsWith(head),
            ),
          { polling: 50 },
          bracketHead,
        );
      }
      // Every frame from the key on, the line as the editor holds it (ghost text removed): the first frames,
      // before tandem answers, show what VS Code itself did with `(` (`def wrap()`, its own `)`).
      await page.evaluate((head) => {
        const seen = [];
        window.__tandemLines = seen;
        const frame = () => {
          for (const row of document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")) {
            const copy = row.cloneNode(true);
            copy.querySelectorAll("[class*=ghost-text]").forEach((part) => part.remove());
            const text = copy.textContent.replace(/\u00a0/g, " ");
            if (text.startsWith(head) && seen.at(-1) !== text) {
              seen.push(text);
            }
          }
          if (window.__tandemLines === seen) {
            requestAnimationFrame(frame);
          }
        };
        requestAnimationFrame(frame);
      }, bracketHead);
      await page.keyboard.type("(");
      bracketGhost = await (
        await page.waitForFunction(
          (source, want) => {
            const ghost = new Function(`return (${source})()`)();
            return ghost.length >= want ? ghost : false;
          },
          { polling: 50 },
          ghostOnScreen.toString(),
          bracketCut.line.length - bracketHead.length - 1,
        )
      ).jsonValue();
      drawn = await page.evaluate(
        (head) =>
          [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")]
            .map((row) => row.textContent.replace(/\u00a0/g, " "))
            .find((text) => text.startsWith(head)),
        bracketHead,
      );
      console.log(`[e2e] ghost text after the auto-closed bracket: ${JSON.stringify(bracketGhost)}; the line as drawn: ${JSON.stringify(drawn)}`);
      const typedLines = await page.evaluate(() => {
        const seen = window.__tandemLines;
        window.__tandemLines = undefined;
        return seen;
      });
      console.log(`[e2e] the line, frame by frame: ${JSON.stringify(typedLines)}`);
      typedLine = typedLines[0] ?? "";
      autoClosed = typedLine.slice(bracketHead.length);
      console.log(`[e2e] typed "(": the line reads ${JSON.stringify(typedLine)} (VS Code inserted ${JSON.stringify(autoClosed)})`);
    }
    if (autoClosed === "") {
      fail("VS Code closed the bracket in none of 5 attempts");
    }
    await page.screenshot({ path: path.join(artifacts, "autoclose-ghost.png") });
    await closeWordList(page);
    await page.keyboard.press("Tab");
    await page.waitForFunction(
      (head) =>
        ![...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((row) => {
          const copy = row.cloneNode(true);
          copy.querySelectorAll("[class*=ghost-text]").forEach((part) => part.remove());
          return copy.textContent.replace(/\u00a0/g, " ").trimEnd() === head;
        }),
      { polling: 50 },
      typedLine.trimEnd(),
    );
    await chord(page, "Control", "KeyS");
    await waitUntil(() => readFileSync(bracketFile, "utf8").length > bracketCut.start + 2, "the saved bracket file to grow");
    await page.screenshot({ path: path.join(artifacts, "autoclose-accepted.png") });
    const bracketSaved = readFileSync(bracketFile, "utf8");
    const acceptedLine = bracketSaved.slice(truth.lastIndexOf("\n", bracketCut.start) + 1).split("\n")[0];
    console.log(`[e2e] after Tab the line reads ${JSON.stringify(acceptedLine)}`);
    if (acceptedLine !== bracketCut.line || !truth.startsWith(bracketSaved)) {
      fail(
        `Tab after the auto-closed bracket left ${JSON.stringify(acceptedLine)} (the truth: ${JSON.stringify(bracketCut.line)}); ` +
          `the file ends ${JSON.stringify(bracketSaved.slice(-120))}`,
      );
    }
    step("auto-closed bracket: Tab leaves the true line, no stray bracket");
  }

  // Issue 28 item 3: a rename (`w` -> `s`) with VS Code's word list open over tandem's next edit (the list
  // offers `same_area` for `s`): Tab must take the next edit, not the list's word.
  if (runs("wordlist-next-edit")) {
    await setNextEditTruth(simUrl, { "rename.py": RENAME_TRUTH });
    await quickOpen(page, "rename.py");
    await chord(page, "Control", "Home");
    for (let i = 0; i < "def area(w".length; i++) {
      await page.keyboard.press("ArrowRight");
    }
    await page.keyboard.press("Backspace");
    await page.keyboard.type("s");
    await waitForNextEdit(page, '"""Area of a w by h', "s");
    const listOpen = () => Boolean(document.querySelector(".editor-widget.suggest-widget.visible"));
    const listOpenedItself = await page.evaluate(listOpen);
    if (!listOpenedItself) {
      await chord(page, "Control", "Space");
      await page.waitForFunction(listOpen, { polling: 50 });
    }
    const listRow = await page.evaluate(
      () => document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused")?.getAttribute("aria-label") ?? "",
    );
    console.log(
      `[e2e] next edit shown with the word list open (${listOpenedItself ? "by itself" : "Ctrl+Space"}), its word ${JSON.stringify(listRow.slice(0, 40))}`,
    );
    await page.screenshot({ path: path.join(artifacts, "next-edit-with-word-list.png") });
    await page.keyboard.press("Tab");
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((line) =>
          /Area of a s by h|def area\(same/.test(line.textContent.replace(/\u00a0/g, " ")),
        ),
      { polling: 50 },
    );
    await page.screenshot({ path: path.join(artifacts, "next-edit-with-word-list-tab.png") });
    const afterTab = await page.evaluate(() =>
      [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")]
        .map((line) => line.textContent.replace(/\u00a0/g, " "))
        .slice(0, 2),
    );
    console.log(`[e2e] after Tab with the word list open: ${JSON.stringify(afterTab)}`);
    if (!afterTab[0].startsWith("def area(s, h):") || !afterTab[1].includes("Area of a s by h")) {
      fail(`Tab with the word list open did not take the next edit: ${JSON.stringify(afterTab)}`);
    }
    step("word list open over a next edit: Tab took the next edit, the rename kept");
  }
  // Issue 28 item 6, a figure (not a check): 100 keys of the truth typed at 80 ms a key in example.py, every
  // animation frame sampled: frames with no ghost text at all, and those in blanks that began when VS
  // Code's word list opened or moved its selection.
  if (only === "blank-frames") {
    await quickOpen(page, path.basename(example));
    await page.click(".editor-instance .monaco-editor .view-lines");
    await chord(page, "Control", "End");
    const keys = truth.slice(cut, cut + 100);
    await page.evaluate((source) => {
      const ghost = new Function(`return (${source})()`);
      const sampler = { frames: [], on: true, first: undefined };
      window.__tandemBlank = sampler;
      sampler.onKey = () => {
        sampler.first ??= performance.now();
      };
      document.addEventListener("keydown", sampler.onKey, { capture: true });
      const frame = () => {
        const row = document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused");
        sampler.frames.push([performance.now(), ghost().trim() !== "", row ? row.getAttribute("aria-label") : null]);
        if (sampler.on) {
          requestAnimationFrame(frame);
        }
      };
      requestAnimationFrame(frame);
    }, ghostOnScreen.toString());
    await page.keyboard.type(keys, { delay: 80 });
    // The frames after the last key until its ghost text is back (or 30 more frames).
    const mark = await page.evaluate(() => window.__tandemBlank.frames.length);
    await page.waitForFunction(
      (from) => {
        const frames = window.__tandemBlank.frames;
        return frames.length >= from + 30 || (frames.length > from && frames.at(-1)[1]);
      },
      { polling: "raf" },
      mark,
    );
    const figures = await page.evaluate(() => {
      const sampler = window.__tandemBlank;
      sampler.on = false;
      const frames = sampler.frames.filter(([at]) => at >= sampler.first);
      // Each blank (frames in a row without ghost text): its length in ms and whether the word list was
      // open when it began.
      const blanks = [];
      for (let i = 0; i < frames.length; i++) {
        const [at, shown, row] = frames[i];
        if (!shown && (i === 0 || frames[i - 1][1])) {
          blanks.push({ from: at, to: at, frames: 0, list: row !== null });
        }
        if (!shown) {
          blanks.at(-1).frames++;
          blanks.at(-1).to = at;
        }
      }
      const ms = frames.length > 1 ? (frames.at(-1)[0] - frames[0][0]) / (frames.length - 1) : 0;
      return { frames: frames.length, blanks, frameMs: ms };
    });
    const blankFrames = figures.blanks.reduce((sum, b) => sum + b.frames, 0);
    const lengths = figures.blanks.map((b) => `${(b.to - b.from + figures.frameMs).toFixed(0)} ms${b.list ? " (list open)" : ""}`);
    console.log(
      `[e2e] blank frames per 100 keys: ${blankFrames} of ${figures.frames} frames without ghost text, in ` +
        `${figures.blanks.length} blanks: ${lengths.join(", ")} (a frame every ${figures.frameMs.toFixed(1)} ms)`,
    );
    step("blank frames measured");
  }
  if (only !== "") {
    throw new OnlyThisScenario();
  }

  // Open the file with Quick Open, as a user would.
  await quickOpen(page, path.basename(example));
  await page.click(".editor-instance .monaco-editor .view-lines");
  await page.keyboard.down("Control");
  await page.keyboard.press("End");
  await page.keyboard.up("Control");
  step("file open, cursor at the end");

  // Sampled from the first frame that shows tandem's suggestion (past the word) while the user types on.
  const pastTheWord = /^\w*(.*)/s.exec(truth.slice(cut + typed.length))[1].split("\n")[0];
  await startGhostSampler(page, pastTheWord);
  await page.keyboard.type(typed, { delay: 40 });
  const typedAt = Date.now();
  // With VS Code's default settings the word list opens too and previews its word as ghost text ("ap"
  // of "wrap"): tandem's suggestion is the ghost text that goes past the end of the word.
  const wordRest = /^\w*/.exec(truth.slice(cut + typed.length))[0];
  const ghostHandle = await page.waitForFunction(
    (wordLength) => {
      // Ghost text is drawn in elements whose class names hold "ghost-text" (nested when the word list's
      // preview joins it): the innermost ones, in document order.
      const parts = [...document.querySelectorAll(".monaco-editor [class*=ghost-text]")]
        .filter((el) => !el.querySelector("[class*=ghost-text]"))
        .map((e) => e.textContent);
      const text = parts.join("").replace(/\u00a0/g, " ");
      return text.trim().length > wordLength ? text : false;
    },
    { polling: 50 },
    wordRest.length,
  );
  const ghost = await ghostHandle.jsonValue();
  console.log(`[e2e] ghost text ${JSON.stringify(ghost)} appeared ${Date.now() - typedAt} ms after the last keystroke`);
  const typingSampled = await stopGhostSampler(page, { fromShown: true });
  console.log(`[e2e] while ${JSON.stringify(typed)} was typed (40 ms a key), from its first frame on: ${blankWords(typingSampled)}`);
  if (typingSampled.blank > 0) {
    console.log(`[e2e] frames and keys (ms from the first key):\n  ${typingSampled.timeline.join("\n  ")}`);
  }
  await page.screenshot({ path: path.join(artifacts, "first-completion.png") });
  step("ghost text shown");

  // The server's `tandem/status` follows its answer: the status item shows its latency and route.
  const statusText = await (
    await page.waitForFunction(
      () => {
        const item = [...document.querySelectorAll(".statusbar-item")].find((el) => /tandem\.status/.test(el.id));
        const text = item?.textContent?.trim() ?? "";
        return /^tandem \d+(\.\d)? m?s (fast|accurate|reused|cached)$/.test(text) ? text : false;
      },
      { polling: 50 },
    )
  ).jsonValue();
  console.log(`[e2e] status item: ${JSON.stringify(statusText)}`);
  step("status item shows the latency");

  const before = truth.slice(0, cut) + typed;
  const trueRest = truth.slice(before.length);
  if (!trueRest.startsWith(ghost)) {
    fail(`the ghost text ${JSON.stringify(ghost)} is not the file's true continuation ${JSON.stringify(trueRest.slice(0, 80))}`);
  }

  // Whether VS Code's word list opened on its own is a matter of timing: open it (Ctrl+Space) if it did
  // not, so that Tab is always pressed with both the list and tandem's ghost text on screen.
  const listOpen = () => Boolean(document.querySelector(".editor-widget.suggest-widget.visible"));
  const openedItself = await page.evaluate(listOpen);
  if (!openedItself) {
    await chord(page, "Control", "Space");
    await page.waitForFunction(listOpen, { polling: 50 });
  }
  await page.waitForFunction(
    (wanted) =>
      [...document.querySelectorAll(".monaco-editor [class*=ghost-text]")]
        .filter((el) => !el.querySelector("[class*=ghost-text]"))
        .map((e) => e.textContent)
        .join("")
        .replace(/\u00a0/g, " ") === wanted,
    { polling: 50 },
    ghost,
  );
  console.log(`[e2e] VS Code's word list is open (${openedItself ? "by itself" : "Ctrl+Space"}) with the ghost text when Tab is pressed`);
  await page.screenshot({ path: path.join(artifacts, "word-list-and-ghost-text.png") });
  // The rest of the word typed through, key by key, with the word list open: tandem's part of the ghost
  // text (past the word) must stay on screen at every frame.
  const pastWord = ghost.slice(wordRest.length);
  const listSampled = await typeThroughSampled(page, wordRest, before.split("\n").pop(), pastWord);
  console.log(
    `[e2e] typed through ${wordRest.length} keys of the ghost text (${JSON.stringify(wordRest)}) with the word ` +
      `list open: ${blankWords(listSampled)}`,
  );
  if (listSampled.blank > 0) {
    fail(`the ghost text left the screen while the user typed what it shows (${listSampled.blank} frames)`);
  }
  await page.keyboard.press("Tab");
  // The line as typed text, without ghost text (the next suggestion may already be showing after it).
  const expectedLine = (before + ghost).split("\n").pop();
  await page.waitForFunction(
    (expected) =>
      [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((line) => {
        const copy = line.cloneNode(true);
        copy.querySelectorAll("[class*=ghost-text]").forEach((ghostPart) => ghostPart.remove());
        return copy.textContent.replace(/\u00a0/g, " ") === expected;
      }),
    { polling: 50 },
    expectedLine,
  );
  await page.keyboard.down("Control");
  await page.keyboard.press("KeyS");
  await page.keyboard.up("Control");
  await waitUntil(() => readFileSync(example, "utf8").length > before.length, "the saved file to grow");
  await page.screenshot({ path: path.join(artifacts, "accepted.png") });
  const saved = readFileSync(example, "utf8");
  // What the user typed through and what Tab inserted, together.
  const accepted = saved.slice(before.length);
  if (!saved.startsWith(before) || !truth.startsWith(saved)) {
    fail(`after Tab and save the file is not a prefix of the truth; it ends with ${JSON.stringify(saved.slice(-120))}`);
  }
  if (!accepted.startsWith(ghost)) {
    fail(`Tab inserted ${JSON.stringify(accepted)}, which does not start with the ghost text ${JSON.stringify(ghost)}`);
  }
  console.log(
    `[e2e] Tab accepted ${accepted.length - wordRest.length} characters after ${wordRest.length} typed: ` +
      JSON.stringify(accepted.slice(0, 80)),
  );
  step("accepted with Tab and saved");

  // The rest needs a trusted workspace: a workspace's settings (the wrong serverPath below) are
  // ignored in Restricted Mode, which is the point of the untrusted run.
  if (!untrusted) {
    // The end of a line: the user types the first key of a line's value and then the rest of its first word
    // key by key (the ghost text must stay on screen at every frame), Tab takes the rest of the line, and
    // the next line follows as ghost text without Enter.
    await quickOpen(page, path.basename(lineFile));
    await chord(page, "Control", "End");
    // A space after the name: tandem's ghost text `= value` follows.
    await page.keyboard.type(" ");
    await page.waitForFunction(
      (source, text) => new Function(`return (${source})()`)().includes(text),
      { polling: 50 },
      ghostOnScreen.toString(),
      lineCut.through.trimStart() + lineCut.value,
    );
    // Type `= ` through the ghost text, one key at a time, sampling the ghost text at every frame.
    const through = lineCut.through.trimStart();
    const sampled = await typeThroughSampled(page, through, `${lineCut.head} `, lineCut.value);
    console.log(
      `[e2e] typed through ${through.length} keys of the ghost text (${JSON.stringify(through)}): ${blankWords(sampled)}`,
    );
    await page.screenshot({ path: path.join(artifacts, "typed-through.png") });
    if (sampled.blank > 0) {
      fail(`the ghost text left the screen while the user typed what it shows (${sampled.blank} frames)`);
    }
    step("typed through the ghost text: on screen at every frame");
    // One more key through the ghost text, a word character: VS Code's word list opens with it. A figure,
    // not a check: VS Code then shows only inline suggestions asked for with the list's selected word, and
    // asks for them after its own fixed 50 ms debounce.
    const opener = lineCut.value[0];
    // With editor.inlineSuggest.suppressSuggestions the list does not open while the ghost text shows.
    const suppressed = settings["editor.inlineSuggest.suppressSuggestions"] === true;
    await startGhostSampler(page, lineCut.value.slice(1));
    await page.keyboard.type(opener);
    await page.waitForFunction(
      (source, wanted, value, listOptional) => {
        const listOpen = Boolean(document.querySelector(".editor-widget.suggest-widget.visible"));
        if (new Function(`return (${source})()`)().includes(wanted) && (listOpen || listOptional)) {
          return true;
        }
        const row = document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused");
        const label = row?.querySelector(".label-name")?.textContent ?? "";
        return label !== "" && !value.startsWith(label);
      },
      { polling: "raf" },
      ghostOnScreen.toString(),
      lineCut.value.slice(1),
      lineCut.value,
      suppressed,
    );
    // (Suppressed, the list would have opened within ~300 ms of the key here: sample that long.)
    const opened = await stopGhostSampler(page, { more: suppressed ? 30 : 10 });
    const selectedWord = await page.evaluate(
      () => document.querySelector(".editor-widget.suggest-widget.visible .monaco-list-row.focused .label-name")?.textContent ?? "",
    );
    console.log(
      `[e2e] the key ${JSON.stringify(opener)} ` +
        (selectedWord ? `opened VS Code's word list (${JSON.stringify(selectedWord)} selected)` : "opened no word list") +
        `: ${blankWords(opened)}`,
    );
    if (opened.blank > 0) {
      console.log(`[e2e] frames and keys (ms from the key):\n  ${opened.timeline.join("\n  ")}`);
    }
    await closeWordList(page);
    await page.waitForFunction(
      (source, wanted) => new Function(`return (${source})()`)().includes(wanted),
      { polling: 50 },
      ghostOnScreen.toString(),
      lineCut.value.slice(1),
    );
    await page.keyboard.press("Tab");
    await page.waitForFunction(
      (expected) =>
        [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((row) => {
          const copy = row.cloneNode(true);
          copy.querySelectorAll("[class*=ghost-text]").forEach((part) => part.remove());
          return copy.textContent.replace(/\u00a0/g, " ") === expected;
        }),
      { polling: 50 },
      lineCut.line,
    );
    // No Enter: the ghost text is the next line, drawn under the accepted one.
    await page.waitForFunction(
      (source, wanted) => new Function(`return (${source})()`)().includes(wanted),
      { polling: 50 },
      ghostOnScreen.toString(),
      lineCut.next.trim(),
    );
    await page.screenshot({ path: path.join(artifacts, "next-line.png") });
    console.log(`[e2e] after Tab at the end of the line, the next line is ghost text: ${JSON.stringify(lineCut.next.trim())}`);
    step("next line suggested without Enter");
    await page.keyboard.press("Escape");
    await chord(page, "Control", "KeyS");
    await waitUntil(() => readFileSync(lineFile, "utf8").length > lineCut.start, "the line file to be saved");
    const lineSaved = readFileSync(lineFile, "utf8");
    if (lineSaved !== truth.slice(0, lineCut.start + lineCut.through.length + lineCut.value.length)) {
      fail(`after typing and Tab the line file ends with ${JSON.stringify(lineSaved.slice(-120))}`);
    }

    // An edit: select the function's lines, "tandem: Edit selection...", type the instruction.
    await quickOpen(page, path.basename(edited));
    await chord(page, "Control", "KeyG");
    await page.waitForSelector(".quick-input-widget input");
    await page.keyboard.type(String(edit.line1));
    await page.keyboard.press("Enter");
    await page.keyboard.press("Home");
    // A bare cursor on a code line (no selection, no diagnostic): tandem offers no code action, so there
    // is no lightbulb. Quick Fix (Ctrl+.) asks for every action there and must find none.
    await chord(page, "Control", "Period");
    const bareAnswer = await (
      await page.waitForFunction(
        () => {
          const message = document.querySelector(".monaco-editor-overlaymessage");
          if (message && /No code actions/.test(message.textContent)) {
            return "none";
          }
          const menu = document.querySelector(".action-widget");
          return menu && menu.offsetHeight > 0 ? `offered: ${menu.textContent}` : false;
        },
        { polling: 50 },
      )
    ).jsonValue();
    const bareBulb = await page.evaluate(lightbulbShown);
    await page.screenshot({ path: path.join(artifacts, "bare-line-no-lightbulb.png") });
    if (bareAnswer !== "none" || bareBulb) {
      fail(`on a bare line VS Code offers code actions (${bareAnswer}; lightbulb ${bareBulb ? "shown" : "not shown"})`);
    }
    await page.keyboard.press("Escape");
    step("bare line: no code action, no lightbulb");
    await page.keyboard.down("Shift");
    for (let line = edit.line1; line <= edit.line2; line++) {
      await page.keyboard.press("ArrowDown");
    }
    await page.keyboard.up("Shift");
    // With a selection the lightbulb shows (tandem's preset edits).
    await page.waitForFunction(lightbulbShown, { polling: 50 });
    await page.screenshot({ path: path.join(artifacts, "selection-lightbulb.png") });
    step("selection: the lightbulb shows");
    await runCommand(page, "tandem: Edit selection...");
    await page.waitForFunction(
      () => document.querySelector(".quick-input-widget .quick-input-title")?.textContent?.includes("tandem: Edit selection"),
      { polling: 50 },
    );
    const editSentAt = Date.now();
    await page.keyboard.type("add a comment before the last line");
    await page.keyboard.press("Enter");
    // Applied (the editor has unsaved changes), or refused (the server says why in a notification).
    const editOutcome = await (
      await page.waitForFunction(
        () => {
          if (document.querySelector(".tab.active.dirty")) {
            return "applied";
          }
          // (The extension's own "tandem: editing…" progress toast is not an answer.)
          const toast = [...document.querySelectorAll(".notification-toast")].find(
            (el) => /tandem: /.test(el.textContent) && !/tandem: editing/.test(el.textContent),
          );
          return toast ? toast.textContent : false;
        },
        { polling: 50 },
      )
    ).jsonValue();
    if (editOutcome !== "applied") {
      fail(`the edit was not applied: ${editOutcome}`);
    }
    console.log(`[e2e] edit applied ${Date.now() - editSentAt} ms after the instruction`);
    // The server says how it ended: the model, the file, the size of the change.
    const editMessage = await (
      await page.waitForFunction(
        (file) => {
          const pattern = new RegExp(`tandem: (fast|accurate) model \\(sim-\\w+\\) edited ${file} \\(\\+\\d+ -\\d+ lines\\)`);
          const shown = [...document.querySelectorAll(".notification-toast .notification-list-item-message")];
          return shown.map((el) => el.textContent).find((text) => pattern.test(text)) ?? false;
        },
        { polling: 50 },
        path.basename(edited).replace(".", "\\."),
      )
    ).jsonValue();
    console.log(`[e2e] edit message: ${JSON.stringify(editMessage)}`);
    // The extension's "tandem: editing…" toast closes with the answer; then the message is the one shown.
    await page.waitForFunction(
      () => ![...document.querySelectorAll(".notification-toast")].some((el) => /tandem: editing/.test(el.textContent)),
      { polling: 50 },
    );
    await page.screenshot({ path: path.join(artifacts, "edit-result.png") });
    await chord(page, "Control", "KeyS");
    await waitUntil(() => ![truth, ""].includes(readFileSync(edited, "utf8")), "the edited file to be saved");
    await page.screenshot({ path: path.join(artifacts, "edit-applied.png") });
    const afterEdit = readFileSync(edited, "utf8");
    if (afterEdit !== edit.after) {
      fail(`after the edit the file is not the edit truth; it has ${JSON.stringify(afterEdit.split("\n").slice(edit.line1 - 1, edit.line2 + 1))}`);
    }
    step("edit applied and saved: the file equals the edit truth");

    // An edit whose change is only to a file that is not open (issue 16, item 4: it had been invisible, the
    // file changed and saved with no word). models.py is open and selected; the truth changes views.py only.
    await setEditTruth([simUrl, accurateUrl], { "views.py": UNOPENED_TRUTH });
    await quickOpen(page, "models.py");
    await chord(page, "Control", "KeyA");
    const shownBefore = await page.evaluate(() =>
      [...document.querySelectorAll(".notification-toast .notification-list-item-message")].map((el) => el.textContent),
    );
    await runCommand(page, "tandem: Edit selection...");
    await page.waitForFunction(
      () => document.querySelector(".quick-input-widget .quick-input-title")?.textContent?.includes("tandem: Edit selection"),
      { polling: 50 },
    );
    await page.keyboard.type("document where compute_total is shown");
    await page.keyboard.press("Enter");
    // The edit's end, as VS Code shows it: the first tandem toast that was not on screen before (not the
    // extension's own "tandem: editing…" progress).
    const unopenedMessage = await (
      await page.waitForFunction(
        (before) =>
          [...document.querySelectorAll(".notification-toast .notification-list-item-message")]
            .map((el) => el.textContent)
            .find((text) => /tandem: /.test(text) && !/tandem: editing/.test(text) && !before.includes(text)) ?? false,
        { polling: 50 },
        shownBefore,
      )
    ).jsonValue();
    console.log(`[e2e] unopened-file edit message: ${JSON.stringify(unopenedMessage)}`);
    if (!/^tandem: (fast|accurate) model \(sim-\w+\) edited views\.py \(\+1 -0 lines, not open\)$/.test(unopenedMessage)) {
      fail(`the edit of an unopened file did not end with its message naming views.py as not open: ${JSON.stringify(unopenedMessage)}`);
    }
    await page.waitForFunction(
      () => ![...document.querySelectorAll(".notification-toast")].some((el) => /tandem: editing/.test(el.textContent)),
      { polling: 50 },
    );
    // Shown whole (a plain one-line notification cuts "not open" off behind an ellipsis), with a button
    // that opens the file.
    const unopenedToast = await page.evaluate((wanted) => {
      const toast = [...document.querySelectorAll(".notification-toast")].find(
        (el) => el.querySelector(".notification-list-item-message")?.textContent === wanted,
      );
      const message = toast?.querySelector(".notification-list-item-message");
      return {
        whole: message !== undefined && message !== null && message.scrollWidth <= message.clientWidth,
        buttons: toast ? [...toast.querySelectorAll(".monaco-button")].map((el) => el.textContent) : [],
      };
    }, unopenedMessage);
    await page.screenshot({ path: path.join(artifacts, "edit-unopened.png") });
    if (!unopenedToast.whole || !unopenedToast.buttons.includes("Open views.py")) {
      fail(`the unopened-file edit's notification is cut off or has no "Open views.py" button: ${JSON.stringify(unopenedToast)}`);
    }
    // The file is saved with the edit (VS Code alone would leave it unsaved in a tab it opens itself; the
    // extension saves it under files.refactoring.autoSave), and no editor holds it unsaved.
    await waitUntil(() => readFileSync(views, "utf8") === UNOPENED_TRUTH, "views.py on disk to be the edit truth");
    const tabs = await page.evaluate(() =>
      [...document.querySelectorAll(".tab")].map((el) => ({ name: el.textContent, dirty: el.classList.contains("dirty") })),
    );
    if (tabs.some((tab) => tab.name.includes("views.py") && tab.dirty)) {
      fail(`views.py is saved, yet a tab holds it unsaved: ${JSON.stringify(tabs)}`);
    }
    console.log(`[e2e] views.py saved; a views.py tab is ${tabs.some((tab) => tab.name.includes("views.py")) ? "open" : "not open"}`);
    if (readFileSync(models, "utf8") !== UNOPENED_MODELS || (await page.$(".tab.active.dirty"))) {
      fail("the edit changed models.py, the open file, whose truth is unchanged");
    }
    // The button opens the file, with the edit in it.
    await page.evaluate(() =>
      [...document.querySelectorAll(".notification-toast .monaco-button")].find((el) => el.textContent === "Open views.py").click(),
    );
    await page.waitForFunction(
      (docstring) =>
        document.querySelector(".tab.active")?.textContent?.includes("views.py") &&
        [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some(
          (line) => line.textContent.replace(/\u00a0/g, " ").trim() === docstring,
        ),
      { polling: 50 },
      UNOPENED_TRUTH.split("\n")[4].trim(),
    );
    await page.screenshot({ path: path.join(artifacts, "edit-unopened-opened.png") });
    step("unopened-file edit: the message names views.py, not open, shown whole; views.py on disk is the truth");

    // Next edits: the user renames `w` on the def line; tandem suggests the same rename in the docstring, then
    // in the return line. Tab accepts each (the second is already on its way when the first is accepted).
    await setNextEditTruth(simUrl, { "area.py": AREA_TRUTH });
    await quickOpen(page, "area.py");
    await page.keyboard.press("Home");
    for (let i = 0; i < "def area(w".length; i++) {
      await page.keyboard.press("ArrowRight");
    }
    await page.keyboard.type("idth");
    await waitForNextEdit(page, '"""Area of a w by h', "idth");
    await page.screenshot({ path: path.join(artifacts, "next-edit-shown.png") });
    step("next edit shown at its place");
    await closeWordList(page);
    await page.keyboard.press("Tab");
    await waitForNextEdit(page, "return w * h", "idth");
    await closeWordList(page);
    await page.keyboard.press("Tab");
    await chord(page, "Control", "KeyS");
    // (Read until it is whole: the save truncates the file before it writes it.)
    await waitUntil(() => ![AREA_BEFORE, ""].includes(readFileSync(area, "utf8")), "the renamed file to be saved");
    const renamed = readFileSync(area, "utf8");
    if (renamed !== AREA_TRUTH) {
      fail(`after two next edits the file is ${JSON.stringify(renamed)}, not ${JSON.stringify(AREA_TRUTH)}`);
    }
    step("two next edits accepted with Tab: the file equals the truth");

    // A next edit off screen: `w` renamed on the def line of far.py, its use 46 lines below. A marker at the
    // cursor says where it is; Tab jumps there, Tab again applies it.
    await setNextEditTruth(simUrl, { "far.py": FAR_TRUTH });
    await quickOpen(page, "far.py");
    await chord(page, "Control", "Home");
    for (let i = 0; i < "def scale(w".length; i++) {
      await page.keyboard.press("ArrowRight");
    }
    await page.keyboard.type("idth");
    const farLine = FAR_TRUTH.split("\n").findIndex((line) => line.startsWith("    return width")) + 1;
    await waitForNextEdit(page, "def scale(width", `next edit at line ${farLine}`);
    const returnShown = await page.evaluate(() =>
      [...document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")].some((line) =>
        line.textContent.includes("return w"),
      ),
    );
    if (returnShown) {
      fail("far.py's edited line is on screen: the edit is not off screen");
    }
    await page.screenshot({ path: path.join(artifacts, "next-edit-jump-marker.png") });
    step(`off-screen next edit: marker at the cursor names line ${farLine}`);
    await closeWordList(page);
    await page.keyboard.press("Tab");
    await waitForNextEdit(page, "return w * factor", "idth");
    await page.screenshot({ path: path.join(artifacts, "next-edit-jumped.png") });
    step("Tab jumped to the next edit");
    await closeWordList(page);
    await page.keyboard.press("Tab");
    await chord(page, "Control", "KeyS");
    await waitUntil(() => ![FAR_BEFORE, ""].includes(readFileSync(far, "utf8")), "far.py to be saved with the edit");
    const farSaved = readFileSync(far, "utf8");
    if (farSaved !== FAR_TRUTH) {
      fail(`after the jump and Tab far.py is not the truth: ${JSON.stringify(farSaved.split("\n").filter((l) => !l.includes("total +=")))}`);
    }
    step("off-screen next edit applied with the second Tab: the file equals the truth");

    const traces = existsSync(traceFile) ? readFileSync(traceFile, "utf8").trim().split("\n").filter(Boolean) : [];
    if (traces.length === 0) {
      fail(`tandem wrote no trace record to ${traceFile}`);
    }
    console.log(`[e2e] ${traces.length} trace record(s) in ${traceFile}`);

    // "tandem: Show latency report" from the Command Palette: the HTML report in a webview, its plots drawn.
    await runCommand(page, "tandem: Show latency report");
    await page.waitForFunction(() => document.querySelector(".tab.active")?.textContent?.includes("latency report"), {
      polling: 100,
    });
    const plotsDrawn = async () => {
      for (const frame of page.frames()) {
        try {
          const drawn = await frame.evaluate(() => document.querySelectorAll(".js-plotly-plot .main-svg").length);
          if (drawn >= 8) {
            return drawn;
          }
        } catch {
          // a frame navigating or gone: look again
        }
      }
      return 0;
    };
    const reportDeadline = Date.now() + stepTimeoutMs;
    while ((await plotsDrawn()) === 0) {
      if (Date.now() > reportDeadline) {
        fail("timed out waiting for the latency report's plots in the webview");
      }
      await new Promise((resolve) => setTimeout(resolve, 100)); // sleep-ok: polling frames of another process
    }
    await page.screenshot({ path: path.join(artifacts, "latency-report.png") });
    step("latency report shown with its plots");

    // (A wrong tandem.serverPath, set while tandem runs, is the "server-path" scenario, run near the start.)
  }

  const ran = markersIn(dirs.workspace);
  if (ran.length > 0) {
    fail(`the workspace's own modules were imported by the server: ${ran.join(", ")}`);
  }
  step("none of the workspace's cache.py, lsp/, completion.py, tandem/ was imported");
  const executed = readdirSync(work).filter((name) => name.startsWith(RUN_MARKER));
  if (executed.length > 0) {
    fail(`executables shipped by the workspace were run: ${executed.join(", ")}`);
  }
  if (untrusted) {
    if (existsSync(path.join(work, "planted-trace.jsonl"))) {
      fail("the untrusted workspace's tandem.trace.path was used");
    }
    step("Restricted Mode: nothing the workspace ships was run, none of its settings used");
  }

  // The Output channel's log file: the server's lines at their own level (its start line is INFO), none
  // of them an error, and no second timestamp inside a line.
  const [outputLog] = filesNamed(path.join(dirs["user-data"], "logs"), "tandem.log");
  const outputLines = outputLog ? readFileSync(outputLog, "utf8").split("\n") : [];
  // Untrusted: the first tandem on the extension host's PATH (VS Code reads it from the user's login shell,
  // so it need not be the wrapper first on code-server's), or the user's activated virtualenv when the run
  // has one, never one inside the workspace.
  const found = outputLines.map((line) => / found the server via (.+?): (\S+)/.exec(line)).filter(Boolean);
  const userPlaces = ["PATH", "$VIRTUAL_ENV"];
  const wanted = untrusted
    ? ([, source, command]) => userPlaces.includes(source) && path.relative(dirs.workspace, command).startsWith("..")
    : ([, source, command]) => source === "tandem.serverPath" && command === tandem;
  if (found.length === 0 || !found.every(wanted)) {
    fail(`the server was not started from the user's tandem: ${JSON.stringify(found.map((m) => m[0]))}`);
  }
  console.log(`[e2e] the extension started${found.map((m) => m[0]).join(";")}`);
  const serverLines = outputLines.filter((line) => / tandem\.(lsp|completion|cache)\./.test(line));
  if (!serverLines.some((line) => /\[info\] tandem\.lsp\.handlers\.lifecycle: tandem serving /.test(line))) {
    fail(`the server's start line is not in the Output as info: ${JSON.stringify(outputLines.slice(0, 20))}`);
  }
  const stamped = serverLines.filter((line) => /\d{4}-\d\d-\d\d.*\d{4}-\d\d-\d\d/.test(line));
  if (stamped.length > 0) {
    fail(`server lines with two timestamps: ${JSON.stringify(stamped)}`);
  }
  // pygls' own records (a cancel for a request already answered, as VS Code sends while you type): a
  // warning reads [warning], and no line of the server's carries a second timestamp (issue 36 item 11).
  const pyglsLines = outputLines.filter((line) => / pygls\./.test(line));
  const pyglsWrong = pyglsLines.filter((line) => /WARNING/.test(line) || /\[error\]/.test(line));
  console.log(`[e2e] Output: ${pyglsLines.length} pygls line(s), e.g. ${JSON.stringify(pyglsLines.slice(0, 3))}`);
  if (pyglsWrong.length > 0) {
    fail(`pygls' records in the Output as errors or with their own level word and time: ${JSON.stringify(pyglsWrong.slice(0, 5))}`);
  }
  const doubleStamped = outputLines.filter((line) => /^\S+ \S+ \[\w+\] \d{4}-\d\d-\d\d \d\d:/.test(line));
  if (doubleStamped.length > 0) {
    fail(`Output lines with two timestamps: ${JSON.stringify(doubleStamped.slice(0, 5))}`);
  }
  const errors = serverLines.filter((line) => /\[error\]/.test(line));
  console.log(`[e2e] Output: ${serverLines.length} server line(s), e.g. ${JSON.stringify(serverLines[0])}`);
  console.log(`[e2e] Output: ${errors.length} error line(s) from the server: ${JSON.stringify(errors)}`);
  step("the Output shows the server's log at its own levels");
  ok = true;
} catch (error) {
  if (!(error instanceof OnlyThisScenario)) {
    throw error;
  }
  ok = true;
} finally {
  if (!ok && page !== undefined) {
    await page.screenshot({ path: path.join(artifacts, "failure.png") }).catch(() => undefined);
  }
  if (!ok && existsSync(serverLog)) {
    copyFileSync(serverLog, path.join(artifacts, "tandem-serve.log"));
    console.log(`[e2e] server log copied to ${path.join(artifacts, "tandem-serve.log")}`);
  }
  await browser?.close().catch(() => undefined);
  stopGroup(server?.child);
  stopGroup(sim?.child);
  stopGroup(accurateSim?.child);
  if (ok) {
    rmSync(work, { recursive: true, force: true });
  } else {
    console.log(`[e2e] left ${work} for inspection`);
  }
  console.log(`[e2e] ${ok ? "passed" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// Loads a Chrome Trace Event JSON file in Perfetto's UI (its trace processor, compiled to WebAssembly, parses
// it) in headless Chromium and prints the names of the track groups the UI shows, one JSON array on stdout.
//   node tests/perfetto_ui.mjs PUPPETEER_MODULE CHROMIUM UI_URL
// UI_URL is the UI's index.html with #!/?url=<the trace>; both served over loopback by the caller.
const [puppeteerModule, chromium, url] = process.argv.slice(2);
const { default: puppeteer } = await import(puppeteerModule);
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 3000 });
  await page.goto(url, { waitUntil: "load" });
  // The track groups appear once the trace processor has imported the file.
  const handle = await page.waitForFunction(
    () => {
      const names = [...document.querySelectorAll("*")]
        .filter((e) => e.childNodes.length === 1 && e.firstChild.nodeType === 3)
        .map((e) => e.textContent.trim())
        .filter((t) => /^(document |model |cache\b|Global Legacy Events)/.test(t));
      return names.length ? names : false;
    },
    { polling: 200, timeout: 90_000 },
  );
  process.stdout.write(JSON.stringify(await handle.jsonValue()) + "\n");
} finally {
  await browser.close();
}

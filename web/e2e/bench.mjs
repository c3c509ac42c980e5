// Figures of the console's jobs screen, driven by BenchmarkConsoleJobs
// (bench/console_test.go) against a running filemill whose project holds 10,000 jobs.
// Debian's Chromium through playwright-core; never a downloaded browser.
//
//   CONSOLE_URL  http://127.0.0.1:PORT (the API listener); several, comma-separated,
//                for builds compared side by side on one database: loads and page
//                rounds alternate between them (each message names its target), the
//                live part runs on the first
//   EMAIL        an owner of the organization, who signs in
//   PASSWORD     their password
//   LOADS        how many first loads of the jobs screen to time
//   CHROMIUM     the browser (default /usr/bin/chromium)
//
// It speaks JSON lines: on standard output one message per measure ({kind: "load"},
// "page", "filter"), then "live-ready" once the jobs screen is open for the live
// part; on standard input {kind: "warm", id, progress} asks whether that job's row
// shows that progress within 2 s (answered {kind: "warm", ok}: the subscription is
// up), {kind: "wait", id, state} when that job's row showed that state (answered
// {kind: "seen", id, state, at}, at in Unix milliseconds), and {kind: "end"} ends it
// ("done").
import { chromium } from "playwright-core";
import { createInterface } from "node:readline";

const need = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`bench.mjs: ${k} is not set`);
  return v;
};
const bases = need("CONSOLE_URL").split(",").map((u) => u.replace(/\/$/, ""));
const base = bases[0];
const email = need("EMAIL");
const password = need("PASSWORD");
const loads = Number(process.env.LOADS || 7);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const say = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const viewport = { width: 1280, height: 800 };

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

// Signed in once; every first load then starts in a new context holding only the
// session's cookies (no cache, no storage).
const signIn = await browser.newContext({ viewport });
{
  const p = await signIn.newPage();
  await p.goto(base + "/console/");
  await p.getByLabel("Email", { exact: true }).fill(email);
  await p.getByLabel("Password", { exact: true }).fill(password);
  await p.getByRole("button", { name: "Sign in" }).click();
  await p.getByRole("heading", { name: "Overview" }).waitFor();
}
// One session serves every target: they share the database.
const storageState = await signIn.storageState();
await signIn.close();
const cookiesFor = (b) => ({ ...storageState, cookies: storageState.cookies.map((c) => ({ ...c, domain: new URL(b).hostname })) });

// The jobs screen is interactive once its table holds a page of rows and the state
// filter's buttons are in place (React handles their clicks from the moment they are
// in the document). Recorded at the first frame after that, in the page's own time.
const watchInteractive = () => {
  const ready = () => {
    const rows = document.querySelectorAll("table.jobs-table tbody tr[data-job-id]");
    const filter = document.querySelector('[role="group"][aria-label="Filter by state"]');
    return rows.length >= 25 && filter && [...filter.querySelectorAll("button")].length === 6 && [...filter.querySelectorAll("button")].every((b) => !b.disabled);
  };
  const obs = new MutationObserver(() => {
    if (globalThis.__dom || !ready()) return;
    globalThis.__dom = performance.now();
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => (globalThis.__interactive = performance.now())));
  });
  obs.observe(document, { childList: true, subtree: true });
};

// The renderer's main thread: how long it ran tasks, scripts, layout and style so far
// (CDP Performance metrics, seconds): work done, apart from the time spent waiting on a
// machine whose cores are busy elsewhere.
async function mainThread(cdp) {
  const { metrics } = await cdp.send("Performance.getMetrics");
  const v = Object.fromEntries(metrics.map((m) => [m.name, m.value]));
  const ms = (x) => Math.round((x ?? 0) * 1000 * 10) / 10;
  return { taskMs: ms(v.TaskDuration), scriptMs: ms(v.ScriptDuration), layoutMs: ms(v.LayoutDuration), styleMs: ms(v.RecalcStyleDuration) };
}

for (let n = 0; n < loads * bases.length; n++) {
  const target = n % bases.length;
  const base = bases[target];
  const ctx = await browser.newContext({ viewport, storageState: cookiesFor(base) });
  const page = await ctx.newPage();
  await page.addInitScript(watchInteractive);
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("Performance.enable");
  await page.goto(base + "/console/jobs", { waitUntil: "load" });
  await page.waitForFunction(() => globalThis.__interactive, null, { timeout: 60_000 });
  const cpu = await mainThread(cdp);
  const m = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const js = performance.getEntriesByType("resource").filter((r) => new URL(r.name).pathname.endsWith(".js"));
    const sent = js.reduce((n, r) => n + r.encodedBodySize, 0);
    return {
      ms: globalThis.__interactive,
      dom: globalThis.__dom,
      dcl: nav.domContentLoadedEventEnd,
      loadEvent: nav.loadEventEnd,
      ttfb: nav.responseStart,
      jsSentKB: sent / 1024,
      scripts: js.map((r) => new URL(r.name).pathname),
      // When each GraphQL request went out and its answer was in, in the page's time.
      graphql: performance
        .getEntriesByType("resource")
        .filter((r) => new URL(r.name).pathname === "/graphql")
        .map((r) => [Math.round(r.startTime), Math.round(r.responseEnd)]),
    };
  });
  say({ kind: "load", target, ...m, ...cpu });
  await ctx.close();
}

const ctx = await browser.newContext({ viewport, storageState: cookiesFor(bases[0]) });
const page = await ctx.newPage();
page.setDefaultTimeout(60_000);
const cdp = await ctx.newCDPSession(page);
await cdp.send("Performance.enable");
const problems = [];
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));

/**
 * Clicks the button named name inside the element matching within, and answers how
 * long until the table's first row is another job (the new page or filter is in the
 * document) and until the frame after that.
 */
async function timedClick(within, name) {
  const before = await mainThread(cdp);
  const r = await page.evaluate(
    ([within, name]) =>
      new Promise((resolve, reject) => {
        const first = () => document.querySelector("table.jobs-table tbody tr[data-job-id]")?.dataset.jobId;
        const before = first();
        const button = [...document.querySelectorAll(within + " button")].find((b) => b.textContent.trim() === name);
        if (!button || button.disabled) return reject(new Error(`no enabled button ${name} in ${within}`));
        const t0 = performance.now();
        const obs = new MutationObserver(() => {
          const now = first();
          if (!now || now === before) return;
          const dom = performance.now() - t0;
          obs.disconnect();
          // The GraphQL requests the click made, from the click: when each went out,
          // its first byte and its end (the server's part against the page's).
          const graphql = performance
            .getEntriesByType("resource")
            .filter((r) => new URL(r.name).pathname === "/graphql" && r.startTime >= t0)
            .map((r) => [r.startTime, r.responseStart, r.responseEnd].map((x) => Math.round(x - t0)));
          requestAnimationFrame(() => setTimeout(() => resolve({ dom, ms: performance.now() - t0, graphql })));
        });
        obs.observe(document.body, { childList: true, subtree: true });
        button.click();
      }),
    [within, name],
  );
  const after = await mainThread(cdp);
  return { ...r, taskMs: Math.round((after.taskMs - before.taskMs) * 10) / 10, scriptMs: Math.round((after.scriptMs - before.scriptMs) * 10) / 10 };
}

const filter = '[role="group"][aria-label="Filter by state"]';
const pager = 'nav[aria-label="Pages"]';
// Three rounds, each on a freshly loaded screen (the client's cache empty): three
// pages older (fetched), three back newer (from the client's cache), and four state
// filters (fetched).
for (let n = 0; n < 3 * bases.length; n++) {
  const target = n % bases.length;
  await page.goto(bases[target] + "/console/jobs", { waitUntil: "load" });
  await page.locator("table.jobs-table tbody tr[data-job-id]").first().waitFor();
  for (let i = 0; i < 3; i++) say({ kind: "page", target, dir: "older", ...(await timedClick(pager, "Older →")) });
  for (let i = 0; i < 3; i++) say({ kind: "page-cached", target, dir: "newer", ...(await timedClick(pager, "← Newer")) });
  for (const s of ["failed", "succeeded", "cancelled", "queued"]) {
    say({ kind: "filter", target, state: s, ...(await timedClick(filter, s)) });
    const states = await page.locator("table.jobs-table tbody tr[data-job-id] .badge").allTextContents();
    if (!states.length || states.some((x) => x !== s)) throw new Error(`filter ${s}: rows in states ${[...new Set(states)]}`);
  }
}

// The live part: the first page of every job open, each row's state as it changes.
await page.goto(base + "/console/jobs", { waitUntil: "load" });
await page.locator("table.jobs-table tbody tr[data-job-id]").first().waitFor();
await page.evaluate(() => {
  const seen = (globalThis.__seen = new Map());
  const look = () => {
    const at = performance.timeOrigin + performance.now();
    for (const tr of document.querySelectorAll("table.jobs-table tbody tr[data-job-id]")) {
      const key = tr.dataset.jobId + "/" + tr.querySelector(".badge")?.textContent;
      if (!seen.has(key)) seen.set(key, at);
    }
  };
  look();
  new MutationObserver(look).observe(document.body, { childList: true, subtree: true, characterData: true });
});
// The page's clock against this process's: both read the machine's wall clock.
const skew = await page.evaluate(() => Date.now() - (performance.timeOrigin + performance.now()));
say({ kind: "live-ready", skew });
for (;;) {
  const { value, done } = await input.next();
  if (done) break;
  const m = JSON.parse(value);
  if (m.kind === "end") break;
  if (m.kind === "warm") {
    // Is the subscription up yet? The job's row shows the progress just published.
    const ok = await page
      .waitForFunction(
        ([id, progress]) => document.querySelector(`tr[data-job-id="${id}"] [role="progressbar"]`)?.getAttribute("aria-valuenow") === String(progress),
        [m.id, m.progress],
        { timeout: 2_000 },
      )
      .then(() => true, () => false);
    say({ kind: "warm", ok });
    continue;
  }
  if (m.kind !== "wait") throw new Error(`bench.mjs: unexpected ${value}`);
  const key = `${m.id}/${m.state}`;
  await page.waitForFunction((key) => globalThis.__seen.has(key), key, { timeout: 30_000 });
  say({ kind: "seen", id: m.id, state: m.state, at: await page.evaluate((key) => globalThis.__seen.get(key), key) });
}
if (problems.length) throw new Error(problems.join("\n"));
await browser.close();
say({ kind: "done" });

// Browser tests of the console against a running filemill (started by the Go test
// TestConsoleInBrowser in cmd/filemill, which sets the variables below). Drives
// Debian's Chromium through playwright-core; never a downloaded browser.
//
//   CONSOLE_URL      http://127.0.0.1:PORT (the API listener)
//   API_KEY          a live key of the organization under test
//   OWNER_EMAIL      the organization's owner, who signs in
//   OWNER_PASSWORD   their password; with SET_PASSWORD_URL, the one they set through it
//   SET_PASSWORD_URL (optional) the one-time link the first start printed for the owner
//   LOCKED_EMAIL     an account of the organization that the tests lock out
//   OUT_DIR          where screenshots (screens/) and the report go
//   HOOK_URL         an https receiver the server may deliver webhooks to
//   FIXTURES         a directory holding photo.png and doc.pdf
//   CHROMIUM         the browser (default /usr/bin/chromium)
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";
import { randomBytes } from "node:crypto";
import assert from "node:assert/strict";

const need = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`console.mjs: ${k} is not set`);
  return v;
};
const base = need("CONSOLE_URL").replace(/\/$/, "");
const apiKey = need("API_KEY");
const ownerEmail = need("OWNER_EMAIL");
const ownerPassword = need("OWNER_PASSWORD");
const setPasswordURL = process.env.SET_PASSWORD_URL || "";
const lockedEmail = need("LOCKED_EMAIL");
const outDir = need("OUT_DIR");
// A URL of its own per run: an endpoint URL is registered once.
const hookURL = need("HOOK_URL") + "?run=" + randomBytes(4).toString("hex");
const fixtures = need("FIXTURES");
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = join(outDir, "screens");
mkdirSync(shots, { recursive: true });

const require = createRequire(import.meta.url);
const axeSource = readFileSync(join(dirname(require.resolve("axe-core")), "axe.min.js"), "utf8");

// A browser of its own per person: each holds its own session cookie.
const profiles = [];
async function browser() {
  const profile = mkdtempSync(join(tmpdir(), "filemill-chromium-"));
  profiles.push(profile);
  return chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 800 },
    timezoneId: "Europe/Paris",
    locale: "en-GB",
  });
}
const context = await browser();
const profile = profiles[0];

const problems = []; // CSP violations and page errors, checked at the end
const page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(90_000); // bounds for a failing wait; a busy machine takes its time
page.on("console", (m) => {
  if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
});
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));

const results = [];
async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - t0 });
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false, error: String(e?.stack || e) });
    console.log(`FAIL ${name}\n${e?.stack || e}`);
    await page.screenshot({ path: join(outDir, `failure-${name.replace(/\W+/g, "-")}.png`) }).catch(() => {});
  }
}

const go = (path) => page.goto(base + "/console" + path, { waitUntil: "load" });
// One matcher object for page.route and page.unroute: unroute finds a route by its matcher.
const everything = () => true;
const screens = []; // [name, path, prepare?]
const axeFindings = [];

async function axe(name) {
  await page.evaluate(axeSource);
  const r = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ["violations"] }));
  for (const v of r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
    axeFindings.push(`${name}: ${v.impact} ${v.id} — ${v.help} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join("; ")})`);
  }
}

async function shoot(name) {
  // Settled: no spinner left (a screen's loading state) before the picture.
  await page.waitForFunction(() => !document.querySelector(".state.loading"), null, { timeout: 15_000 }).catch(() => {});
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.screenshot({ path: join(shots, `${name}-${scheme}.png`) });
    await axe(`${name} (${scheme})`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

let fileId; // the photo, uploaded through the console
let jobId; // its image.convert job
let endpointId;

/** Signs in on the sign-in screen of p. */
async function signIn(p, email, password) {
  await p.getByLabel("Email", { exact: true }).fill(email);
  await p.getByLabel("Password", { exact: true }).fill(password);
  const answered = p.waitForResponse((r) => r.url().endsWith("/graphql") && r.request().method() === "POST");
  await p.getByRole("button", { name: "Sign in" }).click();
  await answered;
}

/** A GraphQL call from a page, as the console's script makes it: its cookie and CSRF header. */
function gqlFrom(p, query, variables = {}) {
  return p.evaluate(
    async ([query, variables]) => {
      const csrf = decodeURIComponent((document.cookie.match(/(?:^|; )filemill_csrf=([^;]*)/) || [])[1] || "");
      const r = await fetch("/graphql", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ query, variables }),
      });
      return { status: r.status, body: await r.json() };
    },
    [query, variables],
  );
}

await test("sign in: the owner sets a password from the link, a wrong password is refused, sign out and in", async () => {
  await page.goto(base + "/");
  await page.waitForURL(base + "/console/");
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await shoot("sign-in");
  if (setPasswordURL) {
    await page.goto(setPasswordURL);
    await page.getByRole("heading", { name: "Set your password" }).waitFor();
    await page.getByLabel("New password").fill(ownerPassword);
    await page.getByLabel("Repeat the password").fill(ownerPassword);
    await page.getByRole("button", { name: "Set password and sign in" }).click();
  } else {
    await signIn(page, ownerEmail, ownerPassword);
  }
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  const cookies = await context.cookies(base + "/graphql");
  const session = cookies.find((c) => c.name === "filemill_session");
  assert.ok(session?.httpOnly, "the session cookie is HttpOnly");
  assert.equal(session.sameSite, "Lax");
  assert.equal(await page.evaluate(() => document.cookie.includes("filemill_session")), false, "the page cannot read the session");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await signIn(page, ownerEmail, "not the password at all");
  await page.getByRole("alert").getByText("invalid_credentials").waitFor();
  await signIn(page, ownerEmail, ownerPassword);
  await page.getByRole("heading", { name: "Overview" }).waitFor();
});

await test("a locked-out account: failures lock it, then even its password is refused", async () => {
  const other = await browser();
  const p = other.pages()[0] ?? (await other.newPage());
  await p.goto(base + "/console/");
  let locked = false;
  for (let i = 0; i < 12 && !locked; i++) {
    await signIn(p, lockedEmail, `wrong password ${i}`);
    const alert = p.getByRole("alert").filter({ hasText: /invalid_credentials|sign_in_locked/ });
    await alert.waitFor();
    locked = /sign_in_locked/.test(await alert.textContent());
    if (!locked) assert.match(await alert.textContent(), /invalid_credentials/);
  }
  assert.ok(locked, "failures lock the account");
  await signIn(p, lockedEmail, ownerPassword);
  await p.getByRole("alert").getByText("sign_in_locked").waitFor();
  await other.close();
});

await test("a browser at / lands on the console; navigation links have their names", async () => {
  await page.goto(base + "/");
  await page.waitForURL(base + "/console/");
  for (const name of ["Overview", "Files", "Run", "Jobs", "Webhooks", "Keys", "Projects", "Members", "Usage"]) {
    await page.getByRole("link", { name, exact: true }).waitFor();
  }
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await shoot("overview");
});

await test("a 30 MB upload goes in parallel parts with progress", async () => {
  await go("/files");
  await page.getByRole("heading", { name: "Files", exact: true }).waitFor();
  const puts = [];
  const onReq = (r) => r.method() === "PUT" && puts.push({ url: r.url(), start: Date.now(), end: 0 });
  const onDone = (r) => {
    const p = puts.find((x) => x.url === r.url() && !x.end);
    if (p) p.end = Date.now();
  };
  page.on("request", onReq);
  page.on("requestfinished", onDone);
  // The network holds every part but the first until the bar has shown a value between
  // 0 and 100: on loopback both parts can land before the page paints in between. The
  // first is held until the page has sent another: on a busy machine the first could
  // otherwise land before the page reads the next part from disk, and the parts, sent
  // in parallel, would not be seen to overlap.
  let first = null;
  let release;
  const shown = new Promise((r) => (release = r));
  let another;
  const anotherSent = new Promise((r) => (another = r));
  const gate = async (route) => {
    const r = route.request();
    if (r.method() !== "PUT") return route.continue();
    first ??= r.url();
    if (r.url() === first) {
      await anotherSent;
    } else {
      another();
      await shown;
    }
    return route.continue();
  };
  await page.route(everything, gate);
  // Every value the bar takes is recorded in the page as it changes, from before it appears.
  await page.evaluate(() => {
    globalThis.__seen = new Set();
    new MutationObserver(() => {
      const b = document.querySelector('[role="progressbar"][aria-label="Upload of big.bin"]');
      if (b) globalThis.__seen.add(Number(b.getAttribute("aria-valuenow")));
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["aria-valuenow"] });
  });
  const big = join(profile, "big.bin");
  writeFileSync(big, randomBytes(30 * 1000 * 1000));
  const chooser = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Upload files" }).click();
  await (await chooser).setFiles(big);
  await page.waitForFunction(() => [...globalThis.__seen].some((v) => v > 0 && v < 100), null, { timeout: 120_000 });
  release();
  await page.getByRole("listitem").filter({ hasText: "big.bin" }).getByRole("link", { name: "ready" }).waitFor({ timeout: 120_000 });
  await page.unroute(everything, gate);
  const seen = await page.evaluate(() => [...globalThis.__seen]);
  page.off("request", onReq);
  page.off("requestfinished", onDone);
  assert.ok(seen.includes(100), `the bar reached 100 (${seen.sort((a, b) => a - b).join(",")})`);
  assert.ok(new Set(puts.map((p) => p.url)).size >= 2, `the file went in parts (${puts.length} PUTs)`);
  const overlap = puts.some((a) => puts.some((b) => a !== b && a.start < b.end && b.start < a.end));
  assert.ok(overlap, "parts were sent at the same time");
  await shoot("files");
});

await test("an upload cut off by a network error resumes, sending only the missing part", async () => {
  await go("/files");
  await page.getByRole("heading", { name: "Files", exact: true }).waitFor();
  const file = join(profile, "resume.bin");
  writeFileSync(file, randomBytes(20 * 1000 * 1000)); // two parts
  // The network lets one part through and fails every other PUT, retries included.
  let first = null;
  let cut = true;
  const t0 = Date.now();
  const handler = (route) => {
    const r = route.request();
    if (r.method() !== "PUT" || !cut) return route.continue();
    first ??= r.url();
    return r.url() === first ? route.continue() : route.abort("internetdisconnected");
  };
  await page.route(everything, handler);
  const chooser = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Upload files" }).click();
  await (await chooser).setFiles(file);
  const item = page.getByRole("listitem").filter({ hasText: "resume.bin" });
  await item.getByRole("button", { name: "Resume" }).waitFor({ timeout: 180_000 });
  assert.match(await item.getByRole("alert").textContent(), /network/i);
  cut = false;
  console.log(`     cut off after ${Date.now() - t0} ms`);
  await page.unroute(everything, handler);
  const puts = [];
  const onReq = (r) => r.method() === "PUT" && puts.push(r.url());
  page.on("request", onReq);
  await item.getByRole("button", { name: "Resume" }).click();
  await item.getByRole("link", { name: "ready" }).waitFor({ timeout: 180_000 });
  page.off("request", onReq);
  assert.equal(puts.length, 1, "only the part that had not landed was sent again");
});

await test("upload an image and run image.convert from the generated form", async () => {
  await go("/files");
  const chooser = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Upload files" }).click();
  await (await chooser).setFiles(join(fixtures, "photo.png"));
  const ready = page.getByRole("listitem").filter({ hasText: "photo.png" }).getByRole("link", { name: "ready" });
  await ready.waitFor();
  fileId = (await ready.getAttribute("href")).split("/").pop();
  await ready.click();
  await page.getByRole("heading", { name: "photo.png" }).waitFor();
  await shoot("file-detail");

  // The file's own "Run a job" picks it.
  await page.getByRole("link", { name: "Run a job" }).click();
  await page.waitForURL(/\/console\/run\?file=/);
  const picked = page.locator('.file-picker input[type="checkbox"]:checked');
  await picked.first().waitFor();
  assert.equal(await picked.count(), 1);
  assert.match(await picked.locator("xpath=..").textContent(), /photo\.png/);
  await page.getByLabel("Operation or preset").selectOption("image.convert");
  // The form comes from image.convert's options schema.
  await page.getByLabel("format", { exact: true }).selectOption("png");
  await page.getByLabel("width", { exact: true }).fill("64");
  await page.getByText(/1 credits?/).first().waitFor();
  const curl = await page.getByLabel("curl", { exact: true }).textContent();
  assert.match(curl, /\/v1\/jobs/);
  assert.match(curl, /"format": "png"/);
  await shoot("run");
  await page.getByRole("button", { name: "Run job" }).click();
  await page.waitForURL(/\/console\/jobs\/job_/);
  jobId = page.url().split("/").pop();
  const navs = await page.evaluate(() => performance.getEntriesByType("navigation").length);
  // Live: the state arrives over the subscription, the page is never reloaded.
  await page.getByRole("status", { name: "Job state" }).filter({ hasText: "succeeded" }).waitFor({ timeout: 90_000 });
  assert.equal(await page.getByRole("status", { name: "Job state" }).textContent(), "succeeded");
  assert.equal(await page.evaluate(() => performance.getEntriesByType("navigation").length), navs);
});

await test("the artifact preview opens", async () => {
  await page.getByRole("img", { name: /Preview of/ }).first().waitFor();
  const ok = await page.getByRole("img", { name: /Preview of/ }).first().evaluate((img) => img.complete && img.naturalWidth === 64);
  assert.ok(ok, "the converted image shows at its new width");
  await shoot("job-detail");
  await go(`/files/${fileId}`);
  await page.getByRole("button", { name: "Preview" }).first().click();
  await page.locator(".artifact-preview img").waitFor();
  assert.ok(await page.locator(".artifact-preview img").evaluate((img) => img.complete && img.naturalWidth > 0));
});

await test("the jobs list shows the job and filters by state in the URL", async () => {
  await go("/jobs");
  await page.locator(`tr[data-job-id="${jobId}"]`).waitFor();
  await page.getByRole("button", { name: "succeeded", exact: true }).click();
  await page.waitForURL(/state=succeeded/);
  await page.locator(`tr[data-job-id="${jobId}"]`).waitFor();
  await page.reload();
  assert.equal(await page.getByRole("button", { name: "succeeded", exact: true }).getAttribute("aria-pressed"), "true");
  await page.goBack();
  await page.waitForURL((u) => !u.search.includes("state="));
  await shoot("jobs");
});

await test("a job created elsewhere appears in the open list, live", async () => {
  await go("/jobs");
  await page.locator(`tr[data-job-id="${jobId}"]`).waitFor();
  const res = await fetch(base + "/graphql", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ query: `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "image.convert", options: {format: "webp", width: 32}}) { id } }`, variables: { f: fileId } }),
  }).then((r) => r.json());
  const id = res.data.createJob.id;
  const row = page.locator(`tr[data-job-id="${id}"]`);
  await row.waitFor();
  await row.getByText("succeeded").waitFor({ timeout: 90_000 });
});

await test("create a webhook endpoint, send a test event, resend its delivery", async () => {
  await go("/webhooks");
  await page.getByRole("heading", { name: "Webhooks" }).waitFor();
  await page.getByRole("button", { name: "Create endpoint" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Endpoint URL").fill(hookURL);
  await dialog.getByRole("checkbox", { name: "file.ready" }).check();
  await shoot("webhooks-create");
  await dialog.getByRole("button", { name: "Create endpoint" }).click();
  const secret = await dialog.getByLabel("Signing secret", { exact: true }).textContent();
  assert.match(secret, /^whsec_/);
  await dialog.getByRole("link", { name: "Open endpoint" }).click();
  await page.waitForURL(/\/webhooks\/we_/);
  endpointId = page.url().split("/").pop();
  await page.getByRole("button", { name: "Send test event" }).click();
  const row = page.getByRole("row").filter({ hasText: "webhook.test" });
  for (let i = 0; !(await row.getByText("succeeded").isVisible()); i++) {
    assert.ok(i < 60, "the test delivery succeeded");
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.waitForTimeout(500);
  }
  await row.getByRole("button", { name: "Resend" }).click();
  await page.getByText("Attempt 2").waitFor({ timeout: 30_000 }).catch(async () => {
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByText("Attempt 2").waitFor({ timeout: 30_000 });
  });
  await shoot("webhook-detail");
  await go("/webhooks");
  await page.getByRole("link", { name: hookURL }).waitFor();
  assert.equal(await page.getByText(secret).count(), 0, "the secret is not shown again");
  await shoot("webhooks");
});

await test("ai-ready on a PDF opens in the viewer", async () => {
  await go("/files");
  const chooser = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Upload files" }).click();
  await (await chooser).setFiles(join(fixtures, "doc.pdf"));
  const ready = page.getByRole("listitem").filter({ hasText: "doc.pdf" }).getByRole("link", { name: "ready" });
  await ready.waitFor();
  const pdfId = (await ready.getAttribute("href")).split("/").pop();
  await go(`/run?file=${pdfId}&op=ai-ready`);
  await page.getByRole("button", { name: "Run job" }).click();
  await page.waitForURL(/\/jobs\/job_/);
  await page.getByRole("status", { name: "Job state" }).filter({ hasText: "succeeded" }).waitFor({ timeout: 120_000 });
  await page.getByRole("link", { name: "Open ai-ready viewer" }).click();
  await page.getByRole("list", { name: "Chunks" }).waitFor();
  await page.getByRole("button", { name: "Render pages" }).click();
  await page.locator(".page-frame img").first().waitFor({ timeout: 90_000 });
  await page.locator(".chunk").first().click();
  await page.getByRole("status", { name: "Selected chunk" }).waitFor();
  await shoot("ai-ready");
});

await test("create a project and a key with restrictions: the secret shown once, then only masked; revoke it", async () => {
  await go("/projects");
  await page.getByLabel("Project name").fill("reports");
  await page.getByLabel("Concurrency limit", { exact: true }).fill("4");
  await page.getByRole("button", { name: "Create project" }).click();
  await page.getByRole("cell", { name: /^reports/ }).waitFor();
  await shoot("projects");

  await go("/keys");
  await page.getByRole("button", { name: "Create key" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Name", { exact: true }).fill("ci uploads");
  await dialog.getByRole("checkbox", { name: "jobs:write" }).uncheck();
  await dialog.getByLabel("IP allow-list").fill("10.0.0.0/8");
  await dialog.getByLabel("Monthly spend limit (credits)").fill("100");
  await dialog.getByLabel("Allowed operations").fill("image.convert");
  await dialog.getByRole("checkbox", { name: "reports" }).check();
  await shoot("keys-create");
  await dialog.getByRole("button", { name: "Create key" }).click();
  const secret = (await dialog.getByLabel("API key", { exact: true }).textContent()).trim();
  assert.match(secret, /^fm_live_[a-z2-7]{32}$/);
  await dialog.getByRole("button", { name: "Done" }).click();
  const row = page.getByRole("row").filter({ hasText: "ci uploads" });
  await row.getByText(secret.slice(0, 12) + "…").waitFor();
  assert.equal(await page.getByText(secret).count(), 0, "the secret is not shown again");
  assert.match(await row.textContent(), /10\.0\.0\.0\/8/);
  assert.match(await row.textContent(), /100 credits\/month/);
  // Its restrictions hold: from this machine's address it is refused.
  const refused = await fetch(base + "/v1/jobs", { headers: { Authorization: `Bearer ${secret}` } });
  assert.equal(refused.status, 403);
  await shoot("keys");
  page.once("dialog", (d) => d.accept());
  await row.getByRole("button", { name: /^Revoke/ }).click();
  await row.getByText("revoked").waitFor();
  const revoked = await fetch(base + "/v1/jobs", { headers: { Authorization: `Bearer ${secret}` } }).then((r) => r.json());
  assert.equal(revoked.error.code, "revoked_api_key");
});

await test("invite a viewer, who signs in and finds every change refused, in the browser and on the server", async () => {
  await go("/members");
  await page.getByRole("button", { name: "Invite member" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Email").fill("viewer@example.com");
  await dialog.getByLabel("Role").selectOption("viewer");
  await dialog.getByRole("button", { name: "Invite member" }).click();
  const link = (await dialog.getByLabel("Invitation link", { exact: true }).textContent()).trim();
  assert.match(link, /\/console\/invitation#token=fmi_/);
  await dialog.getByRole("button", { name: "Done" }).click();
  await page.getByRole("cell", { name: "viewer@example.com", exact: true }).waitFor();
  await shoot("members");

  const vb = await browser();
  const v = vb.pages()[0] ?? (await vb.newPage());
  v.on("pageerror", (e) => problems.push(`viewer page error: ${e.message}`));
  await v.goto(link);
  await v.getByText("as viewer").waitFor();
  await v.getByLabel("Choose a password").fill("a viewer's password");
  await v.getByLabel("Repeat the password").fill("a viewer's password");
  await v.getByRole("button", { name: "Accept invitation" }).click();
  await v.getByRole("heading", { name: "Overview" }).waitFor();
  // Signed in again with the password chosen.
  await v.getByRole("button", { name: "Sign out" }).click();
  await signIn(v, "viewer@example.com", "a viewer's password");
  await v.getByRole("heading", { name: "Overview" }).waitFor();

  // In the browser: every action that changes something is off.
  for (const [path, button] of [["/files", "Upload files"], [`/run?file=${fileId}&op=image.convert`, "Run job"], ["/webhooks", "Create endpoint"], ["/keys", "Create key"], ["/members", "Invite member"], ["/projects", "Create project"]]) {
    await v.goto(base + "/console" + path);
    const b = v.getByRole("button", { name: button, exact: true });
    await b.waitFor();
    assert.ok(await b.isDisabled(), `${button} is off for a viewer`);
  }
  await v.goto(base + `/console/webhooks/${endpointId}`);
  for (const button of ["Send test event", "Disable", "Rotate secret", "Delete"]) {
    assert.ok(await v.getByRole("button", { name: button, exact: true }).isDisabled(), `${button} is off for a viewer`);
  }
  // On the server: the same requests, sent anyway with the viewer's session, are refused.
  const mutations = [
    [`mutation { createUpload(input: {filename: "x.png", byteSize: 10}) { upload { id } } }`],
    [`mutation($f: ID!) { createJob(input: {fileId: $f, operation: "image.convert"}) { id } }`, { f: fileId }],
    [`mutation($f: ID!) { deleteFile(id: $f) { id } }`, { f: fileId }],
    [`mutation { createWebhookEndpoint(input: {url: "https://example.com/x", enabledEvents: ["job.failed"]}) { secret } }`],
    [`mutation($e: ID!) { sendTestEvent(webhookEndpointId: $e) { id } }`, { e: endpointId }],
    [`mutation($e: ID!) { disableWebhookEndpoint(id: $e) { id } }`, { e: endpointId }],
    [`mutation { createProject(input: {name: "viewer's"}) { id } }`],
    [`mutation { createApiKey(input: {name: "viewer's", scopes: ["files:read"]}) { secret } }`],
    [`mutation { createInvitation(email: "x@example.com", role: viewer) { token } }`],
  ];
  for (const [q, vars] of mutations) {
    const r = await gqlFrom(v, q, vars);
    assert.equal(r.body.errors?.[0]?.extensions?.code, "insufficient_scope", `${q}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.data, null);
  }
  await v.goto(base + "/console/");
  await v.getByRole("heading", { name: "Overview" }).waitFor();
  await vb.close();
});

await test("a cross-site POST with the session cookie is refused", async () => {
  const cookies = await context.cookies(base + "/graphql");
  const session = cookies.find((c) => c.name === "filemill_session").value;
  const csrf = cookies.find((c) => c.name === "filemill_csrf").value;
  const post = (origin, withToken) =>
    fetch(base + "/graphql", {
      method: "POST",
      headers: { "Content-Type": "application/json", Cookie: `filemill_session=${session}; filemill_csrf=${csrf}`, Origin: origin, ...(withToken ? { "X-CSRF-Token": csrf } : {}) },
      body: JSON.stringify({ query: `mutation { createProject(input: {name: "from elsewhere"}) { id } }` }),
    }).then(async (r) => ({ status: r.status, body: await r.json() }));
  const cross = await post("https://evil.example", true);
  assert.equal(cross.status, 403);
  assert.equal(cross.body.errors[0].extensions.code, "forbidden");
  const noToken = await post(base, false);
  assert.equal(noToken.status, 401);
  assert.equal(noToken.body.errors[0].extensions.code, "invalid_session");
  const same = await post(base, true);
  assert.equal(same.body.data?.createProject?.id?.slice(0, 4), "prj_", "the same request from the console's page works");
});

await test("usage shows the jobs' credits per day", async () => {
  await go("/usage");
  await page.getByRole("heading", { name: "Usage" }).waitFor();
  await page.getByRole("figure", { name: "Credits charged per day" }).waitFor();
  const summary = await page.locator(".card-head").filter({ hasText: "Credits charged per day" }).textContent();
  const credits = Number(summary.match(/([\d,.]+) credits/)[1].replace(/[,.]/g, ""));
  assert.ok(credits > 0, `credits charged after the jobs (${summary})`);
});

await test("screens: usage, keys, projects, members, account, playground, not found", async () => {
  for (const [name, path] of [["usage", "/usage"], ["account", "/account"], ["not-found", "/nowhere"]]) {
    await go(path);
    await shoot(name);
  }
  await page.goto(base + "/graphql/play");
  await page.getByLabel("Headers (JSON)").fill(JSON.stringify({ Authorization: `Bearer ${apiKey}` }));
  await page.getByRole("button", { name: "Reload" }).click();
  await page.getByRole("button", { name: "viewer" }).waitFor();
  await page.getByRole("button", { name: "Run" }).click();
  await page.getByLabel("Result").getByText('"organization"').waitFor();
  await shoot("playground");
});

await test("keyboard: Tab reaches the navigation with a visible focus ring", async () => {
  await go("/");
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.keyboard.press("Tab"); // skip link
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => {
    const el = document.activeElement;
    const s = getComputedStyle(el);
    return { text: el.textContent, outline: s.outlineStyle !== "none" && s.outlineWidth !== "0px" };
  });
  assert.equal(focused.text, "Overview");
  assert.ok(focused.outline, "the focused link shows an outline");
});

await test("axe finds no serious or critical violation", async () => {
  assert.deepEqual(axeFindings, []);
});

await test("no Content-Security-Policy violation or page error", async () => {
  assert.deepEqual(problems, []);
});

await context.close();
for (const p of profiles) rmSync(p, { recursive: true, force: true });
writeFileSync(join(outDir, "results.json"), JSON.stringify(results, null, 2));
const failed = results.filter((r) => !r.ok).length;
console.log(`screenshots: ${shots}`);
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

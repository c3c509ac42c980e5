import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { Filemill, FilemillError, verifyWebhook, eventFile, WebhookVerificationError, type JobProgress } from "../src/index.js";
import { fileStateStore, openFile } from "../src/node.js";
import { client, env } from "./env.js";

async function tempFile(name: string, bytes: Uint8Array): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "filemill-ts-"));
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

describe("the TypeScript SDK against a real filemill", () => {
  test("uploads a file in one PUT and waits for a job", async () => {
    const { c } = client();
    const file = await c.upload(await openFile(await tempFile("hello.txt", new TextEncoder().encode("hello from node"))));
    expect(file.status).toBe("ready");
    expect(file.filename).toBe("hello.txt");
    expect(file.detected_format?.extension).toBe("txt");
    const job = await c.createJob({ file_id: file.id, operation: "inspect" });
    const seen: JobProgress[] = [];
    const done = await c.waitJob(job.id, { onProgress: (p) => seen.push(p) });
    expect(done.state).toBe("succeeded");
    expect(done.artifacts.length).toBeGreaterThan(0);
    expect(seen.at(-1)).toEqual({ state: "succeeded", progress: 100 });
  });

  test("waits over the subscription, and by polling", async () => {
    expect(typeof WebSocket).toBe("function");
    let gets = 0;
    const counting: typeof fetch = (input, init) => {
      const req = input instanceof Request ? input : new Request(input, init);
      if (req.method === "GET" && /\/v1\/jobs\/job_/.test(req.url)) gets++;
      return fetch(req);
    };
    const c = new Filemill({ baseUrl: env("FILEMILL_API_URL"), apiKey: env("FILEMILL_API_KEY"), fetch: counting });
    const file = await c.upload(new Blob(["wait for me"]), { filename: "w.txt" });
    for (const pollOnly of [false, true]) {
      gets = 0;
      const job = await c.createJob({ file_id: file.id, operation: "inspect" });
      const done = await c.waitJob(job.id, { pollOnly });
      expect(done.state).toBe("succeeded");
      if (!pollOnly) expect(gets, "only the final read went over REST").toBe(1);
      else expect(gets).toBeGreaterThanOrEqual(1);
    }
  });

  test("uploads 40 MB in parts, and resumes an aborted upload from its state", async () => {
    const { c } = client();
    const bytes = randomBytes(40 * 1024 * 1024);
    const want = createHash("sha256").update(bytes).digest("hex");
    const path = await tempFile("big.bin", bytes);
    const state = fileStateStore(path + ".upload.json");
    const abort = new AbortController();
    const first = c.upload(await openFile(path), {
      multipartThreshold: 1,
      concurrency: 1,
      state,
      signal: abort.signal,
      onProgress: () => abort.abort(), // the first part landed: stop here
    });
    await expect(first).rejects.toThrow();
    const saved = await state.load();
    expect(saved).toBeDefined();
    expect(Object.keys(saved!.parts).length).toBeGreaterThanOrEqual(1);
    expect(Object.keys(saved!.parts).length).toBeLessThan(3);

    let startedAt = -1;
    const file = await c.upload(await openFile(path), {
      multipartThreshold: 1,
      state,
      onProgress: (p) => {
        if (startedAt < 0) startedAt = p.sent;
      },
    });
    expect(file.status).toBe("ready");
    expect(file.sha256).toBe(want);
    expect(file.byte_size).toBe(bytes.length);
    expect(startedAt).toBeGreaterThanOrEqual(16 * 1024 * 1024);
    expect(await state.load()).toBeUndefined();
  });

  test("pages through files", async () => {
    const { c } = client(env("FILEMILL_PAGING_KEY"));
    const made = new Set<string>();
    for (let i = 0; i < 45; i++) {
      made.add((await c.createUpload({ filename: `f${i}.txt`, byte_size: i + 1 })).file_id);
    }
    const seen: string[] = [];
    for await (const f of c.files({ limit: 10 })) seen.push(f.id);
    expect(seen.length).toBe(45);
    expect(new Set(seen)).toEqual(made);
  });

  test("retries a 503 and a dropped connection with one idempotency key", async () => {
    const direct = client(env("FILEMILL_FAULT_KEY")).c;
    const file = await direct.upload(new Blob(["retry me"]), { filename: "retry.txt" });
    const { c, retries } = client(env("FILEMILL_FAULT_KEY"), env("FILEMILL_FAULT_URL"));
    const job = await c.createJob({ file_id: file.id, operation: "inspect" });
    expect(retries.map((r) => r.status)).toContain(503);
    const jobs = [];
    for await (const j of direct.jobs()) jobs.push(j.id);
    expect(jobs).toEqual([job.id]);
  });

  test("answers errors as FilemillError", async () => {
    const { c, retries } = client();
    const err = await c.getFile("file_01JD8X7A0K2M3N4P5Q6R7S8T9V").catch((e) => e);
    expect(err).toBeInstanceOf(FilemillError);
    expect(err.status).toBe(404);
    expect(err.code).toBe("not_found");
    expect(err.requestId).toMatch(/^req_/);
    const bad = await c
      .createUpload({ filename: "x.txt", byte_size: 1, validation: { formats: ["nonsense-format"] } })
      .catch((e) => e);
    expect(bad.code).toBe("invalid_request");
    expect(bad.param).toBe("validation.formats[0]");
    expect(retries).toEqual([]);
  });

  test("verifies a real delivery and refuses a tampered one", async () => {
    const fx = JSON.parse(await readFile(env("FILEMILL_WEBHOOK_FIXTURE"), "utf8"));
    const ev = await verifyWebhook(fx.secret, fx.headers, fx.body);
    expect(ev.type).toBe("file.ready");
    expect(eventFile(ev).id).toBe(fx.file_id);
    const tampered = fx.body.replace(fx.file_id, "file_01JD8X7A0K2M3N4P5Q6R7S8T9V");
    const err = await verifyWebhook(fx.secret, fx.headers, tampered).catch((e) => e);
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect(err.reason).toBe("signature");
    const late = await verifyWebhook(fx.secret, fx.headers, fx.body, { now: () => Date.now() + 3_600_000 }).catch((e) => e);
    expect(late.reason).toBe("timestamp");
  });

  test("the README's TypeScript code runs", async () => {
    const readme = await readFile(new URL("../../../README.md", import.meta.url), "utf8");
    const section = readme.slice(readme.indexOf("## Use it from Go/TypeScript"));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code, "a ts block in the README's section").toBeDefined();
    const dir = await mkdtemp(join(tmpdir(), "filemill-readme-"));
    await writeFile(join(dir, "report.pdf"), minimalPDF);
    const src = new URL("../src/", import.meta.url).pathname;
    const module = join(dir, "readme.mts");
    await writeFile(
      module,
      code!.replaceAll('"@filemill/client/node"', JSON.stringify(src + "node.ts")).replaceAll('"@filemill/client"', JSON.stringify(src + "index.ts")),
    );
    const logs: string[] = [];
    const log = console.log;
    console.log = (...a: unknown[]) => logs.push(a.join(" "));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      await import(module);
    } finally {
      process.chdir(cwd);
      console.log = log;
    }
    expect(logs.join("\n")).toContain("succeeded");
    expect((await stat(join(dir, "report.pdf"))).size).toBe(minimalPDF.length);
  });
});

// A one-page PDF, small enough to write inline.
const minimalPDF = new TextEncoder().encode(
  "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
    "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
);

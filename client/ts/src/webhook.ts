import type { Schemas } from "./client.js";

/** A delivered event; `data.object` is the job (job.*) or file (file.*) it is about. */
export interface WebhookEvent {
  id: string;
  object: "event";
  type: string;
  created_at: string;
  data: { object: Record<string, unknown> };
}

export type WebhookFailure = "missing_headers" | "timestamp" | "signature";

export class WebhookVerificationError extends Error {
  constructor(readonly reason: WebhookFailure, message: string) {
    super(`webhook: ${message}`);
    this.name = "WebhookVerificationError";
  }
}

export interface VerifyOptions {
  /** How far webhook-timestamp may be from now (default 300 s): an old delivery is not replayed. */
  toleranceSeconds?: number;
  /** The clock, in milliseconds (default Date.now). */
  now?: () => number;
}

const encoder = new TextEncoder();

/**
 * Verifies a delivery signed by the Standard Webhooks scheme (webhook-id,
 * webhook-timestamp, webhook-signature: "v1,<base64 HMAC-SHA256>" over
 * id.timestamp.body, keyed by the base64 part of a "whsec_" secret) against any of the
 * endpoint's secrets, and answers its event. Pass the body exactly as received.
 */
export async function verifyWebhook(
  secrets: string | string[],
  headers: Headers | Record<string, string | string[] | undefined>,
  body: string | Uint8Array,
  opts: VerifyOptions = {},
): Promise<WebhookEvent> {
  const get = (name: string): string | undefined => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    const v = Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
    return Array.isArray(v) ? v[0] : v;
  };
  const id = get("webhook-id");
  const ts = get("webhook-timestamp");
  const sigs = get("webhook-signature");
  if (!id || !ts || !sigs) throw new WebhookVerificationError("missing_headers", "webhook-id, webhook-timestamp or webhook-signature is missing");
  const at = Number(ts);
  const now = (opts.now ?? Date.now)() / 1000;
  if (!/^\d+$/.test(ts) || Math.abs(now - at) > (opts.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError("timestamp", "webhook-timestamp is outside the tolerance");
  }
  const raw = typeof body === "string" ? encoder.encode(body) : body;
  const signed = new Uint8Array([...encoder.encode(`${id}.${ts}.`), ...raw]);
  const given = sigs
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => s.slice(3));
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const key = await crypto.subtle.importKey("raw", fromBase64(secret.replace(/^whsec_/, "")) as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const want = toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", key, signed)));
    if (given.some((g) => constantTimeEqual(g, want))) {
      return JSON.parse(new TextDecoder().decode(raw)) as WebhookEvent;
    }
  }
  throw new WebhookVerificationError("signature", "no signature matches");
}

/** The job of a job.* event. */
export function eventJob(ev: WebhookEvent): Schemas["Job"] {
  if (!ev.type.startsWith("job.")) throw new Error(`webhook: a ${ev.type} event is not about a job`);
  return ev.data.object as unknown as Schemas["Job"];
}

/** The file of a file.* event. */
export function eventFile(ev: WebhookEvent): Schemas["File"] {
  if (!ev.type.startsWith("file.")) throw new Error(`webhook: a ${ev.type} event is not about a file`);
  return ev.data.object as unknown as Schemas["File"];
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}

function fromBase64(s: string): Uint8Array<ArrayBuffer> {
  const bin = atob(s);
  return Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
}

function toBase64(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s);
}

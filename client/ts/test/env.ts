import { Filemill, type RetryInfo } from "../src/index.js";

// The deployment and keys the Go driver (client/ts_test.go) hands over.
export function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through the Go driver (go test ./client -run TestTypeScriptSDK)`);
  return v;
}

export function client(key = env("FILEMILL_API_KEY"), baseUrl = env("FILEMILL_API_URL")) {
  const retries: RetryInfo[] = [];
  const c = new Filemill({ baseUrl, apiKey: key, retry: { onRetry: (r) => retries.push(r) } });
  return { c, retries };
}

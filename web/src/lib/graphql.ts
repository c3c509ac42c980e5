import { Client, cacheExchange, fetchExchange, subscriptionExchange, type CombinedError } from "@urql/core";
import { createClient as createWSClient, type Client as WSClient } from "graphql-ws";
import { connectionParams, fetchOptions } from "./auth";

export type LinkState = "idle" | "connecting" | "connected" | "reconnecting";

type Listener = (s: LinkState) => void;
const listeners = new Set<Listener>();
let linkState: LinkState = "idle";
function setLinkState(s: LinkState) {
  linkState = s;
  listeners.forEach((l) => l(s));
}
/** The websocket's state, for the header's indicator: a reconnect never blocks a page. */
export function onLinkState(l: Listener): () => void {
  listeners.add(l);
  l(linkState);
  return () => listeners.delete(l);
}

function wsURL(): string {
  const u = new URL("/graphql", location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  return u.toString();
}

let ws: WSClient | undefined;
function socket(): WSClient {
  if (ws) return ws;
  // The socket closes normally (1000) when the last subscription ends (lazy): that is
  // no outage. Any other close while subscribed is, until the next connection.
  let lost = false;
  ws = createWSClient({
    url: wsURL(),
    lazy: true,
    // Keep retrying while the page is open; each attempt waits a little longer.
    retryAttempts: Infinity,
    shouldRetry: () => true,
    retryWait: async (n) => new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** n, 15000) * (0.5 + Math.random() / 2))),
    connectionParams: () => connectionParams(),
    on: {
      connecting: () => setLinkState(lost ? "reconnecting" : "connecting"),
      connected: () => {
        lost = false;
        setLinkState("connected");
      },
      closed: (e) => {
        lost = (e as CloseEvent | undefined)?.code !== 1000;
        setLinkState(lost ? "reconnecting" : "idle");
      },
    },
  });
  return ws;
}

/** One client for the page: queries and mutations over HTTP, subscriptions over /graphql's websocket. */
export function newClient(): Client {
  return new Client({
    url: "/graphql",
    fetchOptions,
    // Pages read fresh data when they open; the cache still dedupes and shares results.
    requestPolicy: "cache-and-network",
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query || "" };
          return {
            subscribe(sink) {
              const unsubscribe = socket().subscribe(input, sink);
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });
}

/** A GraphQL error as the console shows it: the contract code, the message and the request id. */
export interface ApiError {
  code: string;
  message: string;
  requestId?: string;
  param?: string;
}

export function apiError(err: CombinedError | undefined | null): ApiError | null {
  if (!err) return null;
  const g = err.graphQLErrors[0];
  if (g) {
    const ext = (g.extensions ?? {}) as Record<string, unknown>;
    return {
      code: typeof ext.code === "string" ? ext.code : "error",
      message: g.message,
      requestId: typeof ext.requestId === "string" ? ext.requestId : requestIdOf(err),
      param: typeof ext.param === "string" ? ext.param : undefined,
    };
  }
  return { code: "network_error", message: err.networkError?.message || err.message, requestId: requestIdOf(err) };
}

function requestIdOf(err: CombinedError): string | undefined {
  const res = err.response as Response | undefined;
  return res?.headers?.get?.("X-Request-Id") ?? undefined;
}

/** A fresh idempotency key for one mutation, kept by the form that retries it. */
export function newIdempotencyKey(): string {
  return "console-" + crypto.randomUUID().replaceAll("-", "");
}

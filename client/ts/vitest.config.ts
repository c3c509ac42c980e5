import { defineConfig } from "vitest/config";

// The tests talk to a real deployment (FILEMILL_API_URL, FILEMILL_API_KEY and friends,
// given by client/ts_test.go, which starts it): one file at a time, generous timeouts.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    fileParallelism: false,
    // waitJob subscribes where WebSocket exists: Node 22 has it, Node 20 behind a flag.
    execArgv: typeof WebSocket === "undefined" ? ["--experimental-websocket"] : [],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});

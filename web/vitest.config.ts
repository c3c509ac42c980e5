import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// Component tests in jsdom; the browser tests are e2e/console.mjs, run by a Go test.
export default defineConfig({
  plugins: [react()],
  resolve: {
    alias: {
      "@filemill/client/upload": here("../client/ts/src/upload.ts"),
      "@filemill/client/retry": here("../client/ts/src/retry.ts"),
      "@filemill/client/errors": here("../client/ts/src/errors.ts"),
    },
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
  },
});

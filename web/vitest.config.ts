import { defineConfig, mergeConfig } from "vitest/config";
import vite from "./vite.config";

// Component tests in jsdom, with the app's own resolution (aliases, React); the browser
// tests are e2e/console.mjs, run by a Go test.
export default mergeConfig(
  vite,
  defineConfig({
    test: {
      environment: "jsdom",
      include: ["src/**/*.test.{ts,tsx}"],
    },
  }),
);

import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// The console is served at /console/ by filemill (package web embeds dist/); the
// playground page (play.html) is served at /graphql/play and shares the assets.
// Builds are deterministic (content hashes, no timestamps) so `make lint` can rebuild
// and compare with the committed dist/.
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  resolve: {
    alias: {
      // The TypeScript SDK's uploader, from its source in the repository.
      "@filemill/client/upload": here("../client/ts/src/upload.ts"),
      "@filemill/client/retry": here("../client/ts/src/retry.ts"),
      "@filemill/client/errors": here("../client/ts/src/errors.ts"),
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    reportCompressedSize: false,
    rollupOptions: {
      input: { index: here("index.html"), play: here("play.html") },
      checks: { pluginTimings: false },
    },
  },
  server: {
    proxy: {
      "/graphql": { target: "http://127.0.0.1:8080", ws: true },
    },
  },
});

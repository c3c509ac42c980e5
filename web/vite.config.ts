import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/**
 * graphql(`query Name ...`) in src/ becomes the document NameDocument (fragments:
 * NameFragmentDoc) that GraphQL Code Generator wrote in src/gql/graphql.ts, as a
 * module of its own: what the generator's babel plugin does. gql.ts's map of every
 * operation is then never loaded, and each screen's chunk carries its own documents
 * only. Types are unchanged (tsc reads the source as written).
 */
function graphqlDocuments(): Plugin {
  const generated = here("src/gql/graphql.ts");
  const prefix = "virtual:filemill-gql/";
  const call = /\bgraphql\(\s*`\s*(query|mutation|subscription|fragment)\s+(\w+)[^`]*`\s*\)/g;
  const line = /^export const (\w+) = (\{.*\}) as unknown as DocumentNode<.*>;$/gm;
  let docs: Map<string, string> | undefined;
  return {
    name: "filemill:graphql-documents",
    enforce: "pre",
    buildStart() {
      docs = undefined;
    },
    resolveId(id) {
      return id.startsWith(prefix) ? "\0" + id : null;
    },
    load(id) {
      if (!id.startsWith("\0" + prefix)) return null;
      if (!docs) {
        this.addWatchFile(generated);
        docs = new Map([...readFileSync(generated, "utf8").matchAll(line)].map((m) => [m[1], m[2]]));
      }
      const name = id.slice(prefix.length + 1);
      const doc = docs.get(name);
      if (!doc) this.error(`${name} is not in src/gql/graphql.ts: run npm run generate`);
      // JSON.parse of a string literal: quicker for the engine to read than an object literal.
      return `export default /*#__PURE__*/ JSON.parse(${JSON.stringify(doc)});`;
    },
    transform(code, id) {
      if (!/\/src\/.*\.tsx?$/.test(id) || id.includes("/src/gql/") || !code.includes("graphql(")) return null;
      const names = new Set<string>();
      const out = code.replace(call, (_, kind: string, name: string) => {
        const doc = name + (kind === "fragment" ? "FragmentDoc" : "Document");
        names.add(doc);
        return "__gql_" + doc;
      });
      if (!names.size) return null;
      const imports = [...names].map((d) => `import __gql_${d} from ${JSON.stringify(prefix + d)};\n`).join("");
      return { code: imports + out, map: null };
    },
  };
}

// The console is served at /console/ by filemill (package web embeds dist/); the
// playground page (play.html) is served at /graphql/play and shares the assets.
// Builds are deterministic (content hashes, no timestamps) so `make lint` can rebuild
// and compare with the committed dist/.
export default defineConfig({
  base: "/console/",
  plugins: [graphqlDocuments(), react()],
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

import type { CodegenConfig } from "@graphql-codegen/cli";

// Typed operations from the server's schema (graph/*.graphqls): every graphql(`...`)
// in src/ becomes a TypedDocumentNode in src/gql/, committed and checked by `make lint`.
const config: CodegenConfig = {
  schema: "../graph/*.graphqls",
  documents: ["src/**/*.{ts,tsx}", "!src/gql/**/*"],
  ignoreNoDocuments: true,
  generates: {
    "src/gql/": {
      preset: "client",
      config: {
        scalars: { Time: "string", Int64: "number", JSON: "unknown", ID: "string" },
        enumsAsTypes: true,
        useTypeImports: true,
        skipTypename: false,
      },
      presetConfig: { fragmentMasking: false },
    },
  },
  hooks: {},
};
export default config;

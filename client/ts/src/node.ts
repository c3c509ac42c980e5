// Node helpers: a file on disk as a Blob read as it is sent, and a file to keep an
// upload's resume state in. Browsers use a File and localStorage instead.
import { openAsBlob } from "node:fs";
import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename } from "node:path";
import type { UploadState, UploadStateStore } from "./upload.js";

/** The file at path as a File whose bytes are read from disk as they are sent. */
export async function openFile(path: string): Promise<File> {
  const [blob, info] = await Promise.all([openAsBlob(path), stat(path)]);
  return new File([blob], basename(path), { lastModified: info.mtimeMs });
}

/** Keeps an upload's resume state in a small JSON file, replaced whole on each save. */
export function fileStateStore(path: string): UploadStateStore {
  return {
    async load() {
      try {
        return JSON.parse(await readFile(path, "utf8")) as UploadState;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw e;
      }
    },
    async save(state) {
      await writeFile(path + ".tmp", JSON.stringify(state), { mode: 0o600 });
      await rename(path + ".tmp", path);
    },
    async clear() {
      await rm(path, { force: true });
    },
  };
}

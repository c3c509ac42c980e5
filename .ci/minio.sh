#!/usr/bin/env bash
# Makes sure a MinIO server binary is here for the S3 storage tests (storage/miniotest
# looks at $MINIO_BIN, then minio on PATH, then /usr/local/bin/minio). Reuses what is
# there; otherwise builds it from source, which takes a few minutes.
set -euo pipefail

if [ -n "${MINIO_BIN:-}" ] && [ -x "$MINIO_BIN" ]; then
  echo "minio: using $MINIO_BIN"
  exit 0
fi
if command -v minio >/dev/null 2>&1; then
  echo "minio: using $(command -v minio)"
  exit 0
fi
if [ -x /usr/local/bin/minio ]; then
  echo "minio: using /usr/local/bin/minio"
  exit 0
fi

echo "minio: installing into /usr/local/bin (go install, a few minutes)"
# GOFLAGS is cleared so a project's flags (e.g. -mod=vendor) do not leak into the build.
GOBIN=/usr/local/bin GOFLAGS= go install github.com/minio/minio@latest
/usr/local/bin/minio --version

#!/usr/bin/env bash
# Makes sure a MinIO server binary is here for the S3 storage tests (storage/miniotest
# looks at $MINIO_BIN, then minio on PATH, then /usr/local/bin/minio). Reuses what is
# there; otherwise builds the pinned version from source, which takes a few minutes.
set -euo pipefail

# The version the suite was last run against. MinIO's module has no semantic versions:
# this is the pseudo-version of the commit (`go version -m` on a binary built with go
# install shows it). Change it deliberately, after the S3 tests pass on the new one.
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

# using BIN says which binary the tests will run, and warns when it was built from
# another version than the pinned one.
using() {
  local built
  built=$(go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/minio/minio" { print $3 }' || true)
  echo "minio: using $1 (${built:-version unknown})"
  if [ -n "$built" ] && [ "$built" != "$MINIO_VERSION" ]; then
    echo "minio: warning: $1 is $built, the tests are pinned to $MINIO_VERSION" >&2
  fi
}

if [ -n "${MINIO_BIN:-}" ] && [ -x "$MINIO_BIN" ]; then
  using "$MINIO_BIN"
  exit 0
fi
if command -v minio >/dev/null 2>&1; then
  using "$(command -v minio)"
  exit 0
fi
if [ -x /usr/local/bin/minio ]; then
  using /usr/local/bin/minio
  exit 0
fi

echo "minio: installing $MINIO_VERSION into /usr/local/bin (go install, a few minutes)"
# GOFLAGS is cleared so a project's flags (e.g. -mod=vendor) do not leak into the build.
GOBIN=/usr/local/bin GOFLAGS= go install "github.com/minio/minio@$MINIO_VERSION"
using /usr/local/bin/minio

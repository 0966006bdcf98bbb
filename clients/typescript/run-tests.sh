#!/bin/sh
# The TypeScript SDK's tests, for the root `make test` and CI: installs the pinned
# devDependencies (npm ci) when node_modules is missing or older than package-lock.json,
# then `npm test` (tsc, then Node's test runner against a propdata server that
# test/run.mjs starts with the repository's .venv Python; see README.md).
#
# Exits non-zero when a test fails. Without `node` (or without `npm`, or with a Node older
# than 18) it prints why and exits 0, except when CI is set: then it fails, so CI can never
# pass by skipping (.ci/run installs nodejs and npm).
set -eu
cd "$(dirname "$0")"

skip() {
  if [ -n "${CI:-}" ]; then
    echo "clients/typescript: $1; CI needs it (install nodejs and npm)" >&2
    exit 1
  fi
  echo "clients/typescript: $1; skipping the TypeScript SDK tests"
  exit 0
}

command -v node >/dev/null 2>&1 || skip "node is not installed"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || skip "node $(node --version) is older than 18"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec npm test --silent

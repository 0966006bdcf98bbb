// `npm test`: builds the package and its tests with tsc, then runs the tests
// (build-test/*.test.js) with Node's own test runner against a live propdata server.
//
// With PROPDATA_BASE_URL and PROPDATA_API_KEY both set, the tests use that server (the tests
// that need the test catalogue or the operator's command line are skipped). Otherwise this
// script starts one: test/server.py, run with the repository's Python (PROPDATA_PYTHON, else
// ../../.venv/bin/python, else python3), builds the test catalogue into a temporary store,
// makes keys with `propdata keys create`, serves it on a free port and prints the address
// and keys (while tsc builds); the server stops when this script closes the helper's
// standard input.
// Arguments are passed to `node --test` (npm test -- --test-name-pattern=lookup).

import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const repo = resolve(pkg, "../..");
const built = join(pkg, "build-test");
const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");

const env = { ...process.env };
let helper = null;

function python() {
  if (process.env.PROPDATA_PYTHON) return process.env.PROPDATA_PYTHON;
  const venv = join(repo, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

function exited(child) {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode ?? 1);
    else child.once("exit", (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}

/** Run `node ARGS` in the package's folder; its exit code. */
async function node(args) {
  const child = spawn(process.execPath, args, { cwd: pkg, stdio: "inherit" });
  return exited(child);
}

async function build() {
  for (const project of ["tsconfig.json", "tsconfig.test.json"]) {
    if ((await node([tsc, "-p", project])) !== 0) throw new Error(`tsc -p ${project} failed`);
  }
}

async function startServer() {
  const started = Date.now();
  helper = spawn(python(), [join(here, "server.py")], {
    cwd: repo,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: helper.stdout });
  const first = new Promise((done, fail) => {
    lines.once("line", done);
    helper.once("exit", (code) => fail(new Error(`test/server.py exited (${code}) before serving`)));
    helper.once("error", fail);
    setTimeout(() => fail(new Error("test/server.py did not serve within 120 s")), 120_000).unref();
  });
  const info = JSON.parse(await first);
  env.PROPDATA_BASE_URL = info.baseUrl;
  env.PROPDATA_API_KEY = info.keys.main;
  env.PROPDATA_TEST_SERVER = JSON.stringify(info);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`# propdata test server at ${info.baseUrl} (started in ${seconds} s)`);
}

async function stopServer() {
  if (helper === null || helper.exitCode !== null) return;
  helper.stdin.end();
  const timer = setTimeout(() => helper.kill("SIGTERM"), 15_000);
  await exited(helper);
  clearTimeout(timer);
}

let tests = null;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    tests?.kill(signal);
    await stopServer();
    process.exit(130);
  });
}

let code = 1;
try {
  const external = Boolean(env.PROPDATA_BASE_URL && env.PROPDATA_API_KEY);
  const serving = external ? Promise.resolve() : startServer();
  serving.catch(() => {}); // awaited below, after the build
  await build();
  await serving;
  if (external) console.log(`# using the server at ${env.PROPDATA_BASE_URL} (PROPDATA_BASE_URL)`);
  const files = readdirSync(built)
    .filter((name) => name.endsWith(".test.js"))
    .sort()
    .map((name) => join(built, name));
  tests = spawn(process.execPath, ["--test", ...process.argv.slice(2), ...files], {
    env,
    stdio: "inherit",
  });
  code = await exited(tests);
} catch (error) {
  console.error(`# ${error instanceof Error ? error.message : error}`);
} finally {
  await stopServer();
}
process.exit(code);

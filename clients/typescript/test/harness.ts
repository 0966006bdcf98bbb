// What the tests share: the server under test, clients of it, and recorders.

import { spawnSync } from "node:child_process";

import { Client, type ClientOptions, type FetchLike } from "@propdata/client";

/** What test/server.py printed, when test/run.mjs started the server itself. */
export interface TestServer {
  baseUrl: string;
  keys: { main: string; free: string; quota: string; revoked: string; minute: string; pro: string };
  cli: string[];
  env: Record<string, string>;
}

export const server: TestServer | null = process.env.PROPDATA_TEST_SERVER
  ? (JSON.parse(process.env.PROPDATA_TEST_SERVER) as TestServer)
  : null;

export const baseUrl = required("PROPDATA_BASE_URL");
export const apiKey = required("PROPDATA_API_KEY");

/** `{ skip }` for a test that needs the server test/run.mjs starts (its catalogue, its keys). */
export const ownServer = server
  ? {}
  : { skip: "needs the test server (unset PROPDATA_BASE_URL to let npm test start one)" };

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with npm test`);
  return value;
}

/** A client of the server under test (key and address from the environment). */
export function client(options: ClientOptions = {}): Client {
  return new Client(options);
}

/** A sleep that records its waits instead of sleeping; `then` runs during each "wait". */
export function recorder(then?: (seconds: number) => void | Promise<void>) {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (seconds: number) => {
      waits.push(seconds);
      await then?.(seconds);
    },
  };
}

/** The global fetch, counting the requests and the URLs it sends. */
export function counting(inner: FetchLike = (url, init) => fetch(url, init)) {
  const urls: string[] = [];
  const wrapped: FetchLike = (url, init) => {
    urls.push(url);
    return inner(url, init);
  };
  return { urls, fetch: wrapped };
}

/** An error answer as the service writes one. */
export function errorAnswer(status: number, code: string, headers: Record<string, string> = {}) {
  const requestId = "req_00000000000000ff";
  const body = { error: { code, message: `synthetic ${code}`, status, requestId } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", "X-Request-Id": requestId, ...headers },
  });
}

/** Run `propdata ARGS` on the test server's store (an operator's command). */
export function operator(args: string[], input?: string): string {
  if (!server) throw new Error("no test server");
  const [command, ...rest] = server.cli as [string, ...string[]];
  const result = spawnSync(command, [...rest, ...args], {
    input,
    env: { ...withoutPropdata(process.env), ...server.env, PROPDATA_LOG_LEVEL: "ERROR" },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (result.status !== 0) {
    throw new Error(`propdata ${args.join(" ")} failed: ${result.stderr || result.error}`);
  }
  return result.stdout;
}

/**
 * A data load into the test server's store (test/load.py): the catalogue's record `id` with
 * `changes` (snake_case fields, numbers). The server answers from it on its next request.
 */
export function loadRecord(id: string, changes: Record<string, number>): void {
  if (!server) throw new Error("no test server");
  const python = server.cli[0] as string;
  const script = new URL("../test/load.py", import.meta.url).pathname;
  const args = [script, id, ...Object.entries(changes).map(([k, v]) => `${k}=${v}`)];
  const result = spawnSync(python, args, {
    env: { ...withoutPropdata(process.env), ...server.env, PROPDATA_LOG_LEVEL: "ERROR" },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (result.status !== 0) throw new Error(`test/load.py failed: ${result.stderr || result.error}`);
}

function withoutPropdata(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("PROPDATA_")));
}

/** A TCP port nothing listens on. */
export async function closedPort(): Promise<number> {
  const net = await import("node:net");
  return new Promise((done, fail) => {
    const probe = net.createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => done(port));
    });
  });
}

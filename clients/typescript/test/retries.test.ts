// Errors, rate-limit headers and the retry rule: against the live server where it can say
// it (401, 429 on a Free key, a daily quota), with a wrapped fetch where it cannot (503).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

import {
  APIConnectionError,
  AmbiguousAddressError,
  AuthenticationError,
  Client,
  InvalidParameterError,
  NotFoundError,
  PropdataError,
  QuotaExceededError,
  RateLimitError,
  ServiceUnavailableError,
  VERSION,
  retryWait,
  type FetchLike,
} from "@propdata/client";

import {
  apiKey,
  baseUrl,
  client,
  closedPort,
  counting,
  errorAnswer,
  operator,
  ownServer,
  recorder,
  server,
} from "./harness.js";

describe("Client", () => {
  it("reads the key and address from PROPDATA_API_KEY and PROPDATA_BASE_URL", async () => {
    const c = new Client();
    assert.equal(c.baseUrl, baseUrl.replace(/\/+$/, ""));
    assert.equal(c.maxRetries, 2);
    assert.equal(c.maxRetryWait, 60);
    assert.equal(c.lastRateLimit, null);
    assert.ok(!String(c).includes(apiKey) && !JSON.stringify(c).includes(apiKey));
    await c.auth.status();
  });

  it("throws AuthenticationError without a key, before any request", () => {
    const missing = (() => {
      try {
        return new Client({ apiKey: " " });
      } catch (e) {
        return e;
      }
    })();
    assert.ok(missing instanceof AuthenticationError);
    assert.equal(missing.code, "missing_api_key");
    assert.equal(missing.status, null);
    assert.throws(() => new Client({ apiKey: "pmd live" }), /spaces or control characters/);
    assert.throws(() => new Client({ baseUrl: "ftp://example.com" }), TypeError);
    assert.throws(() => new Client({ maxRetries: -1 }), RangeError);
  });

  it("has the version of package.json", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    assert.equal(VERSION, pkg.version);
  });
});

describe("errors", () => {
  it("a bad key is an AuthenticationError with the request id, never retried", async () => {
    const sent = counting();
    const slept = recorder();
    const c = new Client({ apiKey: "pmd_live_notavalidkey", fetch: sent.fetch, sleep: slept.sleep });
    const error = await c.auth.status().catch((e: unknown) => e);
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.code, "invalid_api_key");
    assert.equal(error.status, 401);
    assert.match(error.requestId ?? "", /^req_[0-9a-f]{16}$/);
    assert.equal(error.rateLimit, null, "a 401 carries no rate headers");
    assert.equal(c.lastRateLimit, null);
    assert.equal(sent.urls.length, 1);
    assert.deepEqual(slept.waits, []);
  });

  it("a revoked key is an AuthenticationError revoked_api_key", ownServer, async () => {
    const c = new Client({ apiKey: server?.keys.revoked ?? "" });
    const error = await c.properties.search().catch((e: unknown) => e);
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.code, "revoked_api_key");
  });

  it("never retries a 4xx other than 429, nor a 500", async () => {
    const cases: [number, string, abstract new (...a: never[]) => PropdataError][] = [
      [400, "invalid_parameter", InvalidParameterError],
      [401, "invalid_api_key", AuthenticationError],
      [404, "not_found", NotFoundError],
      [405, "method_not_allowed", PropdataError],
      [409, "ambiguous_address", AmbiguousAddressError],
      [500, "internal_error", PropdataError],
    ];
    for (const [status, code, kind] of cases) {
      const sent = counting(async () => errorAnswer(status, code));
      const slept = recorder();
      const c = client({ fetch: sent.fetch, sleep: slept.sleep });
      const error = await c.properties.get("t-000").catch((e: unknown) => e);
      assert.ok(error instanceof kind, `${status}: ${String(error)}`);
      assert.equal((error as PropdataError).code, code);
      assert.equal((error as PropdataError).status, status);
      assert.equal((error as PropdataError).requestId, "req_00000000000000ff");
      assert.equal(sent.urls.length, 1, `${status} sent once`);
      assert.deepEqual(slept.waits, []);
    }
  });

  it("an answer that is not the error shape still becomes the status's error", async () => {
    const html: FetchLike = async () => new Response("<h1>Bad gateway</h1>", { status: 404 });
    const error = await client({ fetch: html }).markets.get("50010").catch((e: unknown) => e);
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.code, "not_found");
    assert.match(error.message, /Bad gateway/);
  });
});

describe("lastRateLimit", () => {
  it("exposes the last answer's X-RateLimit-* and X-Quota-* headers", async () => {
    const c = client();
    await c.properties.search({ limit: 1 });
    const seen = c.lastRateLimit;
    assert.ok(seen);
    assert.equal(typeof seen.limit, "number");
    assert.equal(typeof seen.remaining, "number");
    assert.ok((seen.reset ?? 0) > 1_700_000_000);
    assert.equal(seen.retryAfter, null);
  });

  it("shows the test key's limits and quota", ownServer, async () => {
    const c = client();
    await c.markets.get("50010");
    assert.equal(c.lastRateLimit?.limit, 1_000_000);
    assert.equal(c.lastRateLimit?.quotaLimit, 100_000_000);
    assert.equal(typeof c.lastRateLimit?.quotaRemaining, "number");
    assert.equal(typeof c.lastRateLimit?.quotaReset, "number");
  });
});

describe("retries against the server", () => {
  it("a Free key past its per-minute limit waits Retry-After + 0-1 s, then succeeds", ownServer, async () => {
    const key = server?.keys.free ?? "";
    let announced = 0;
    const slept = recorder(() => {
      // While the client "waits", move the key to a plan with room, as an operator would:
      // the next request then succeeds without the test waiting out the minute.
      announced = c.lastRateLimit?.retryAfter ?? -1;
      operator(["keys", "plan", "-", "developer"], `${key}\n`);
    });
    const sent = counting();
    const c = new Client({ apiKey: key, sleep: slept.sleep, fetch: sent.fetch });
    for (let i = 0; i < 10; i++) await c.properties.get("t-000");
    assert.equal(c.lastRateLimit?.limit, 10);
    assert.equal(c.lastRateLimit?.remaining, 0);
    assert.equal(c.lastRateLimit?.quotaLimit, 100);
    assert.equal(c.lastRateLimit?.quotaRemaining, 90);
    assert.deepEqual(slept.waits, []);

    const home = await c.properties.get("t-000");
    assert.equal(home.id, "t-000");
    assert.equal(sent.urls.length, 12, "10, then a 429, then the retry");
    assert.equal(slept.waits.length, 1);
    const wait = slept.waits[0] ?? 0;
    assert.ok(announced >= 1 && announced <= 60, `Retry-After ${announced}`);
    assert.ok(wait >= announced && wait < announced + 1, `waited ${wait} for ${announced}`);
    assert.equal(c.lastRateLimit?.limit, 100, "the retry ran on the new plan");
  });

  it(
    "a key past its per-minute limit really waits, then succeeds (PROPDATA_TEST_REAL_WAIT=1)",
    server && process.env.PROPDATA_TEST_REAL_WAIT ? {} : { skip: "takes a minute: set PROPDATA_TEST_REAL_WAIT=1" },
    async () => {
      const c = new Client({ apiKey: server?.keys.minute ?? "" });
      await c.properties.get("t-000");
      const started = Date.now();
      const again = await c.properties.get("t-001");
      assert.equal(again.id, "t-001");
      const seconds = (Date.now() - started) / 1000;
      assert.ok(seconds >= 55 && seconds < 63, `waited ${seconds} s`);
    },
  );

  it("a daily quota's long Retry-After throws QuotaExceededError instead of sleeping", ownServer, async () => {
    const key = server?.keys.quota ?? "";
    const slept = recorder();
    const c = new Client({ apiKey: key, sleep: slept.sleep });
    await c.properties.get("t-000");
    assert.equal(c.lastRateLimit?.quotaLimit, 1);
    assert.equal(c.lastRateLimit?.quotaRemaining, 0);
    const error = await c.properties.get("t-000").catch((e: unknown) => e);
    assert.ok(error instanceof QuotaExceededError, String(error));
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.code, "quota_exceeded");
    assert.equal(error.status, 429);
    assert.ok((error.retryAfter ?? 0) > 86_000, `Retry-After ${error.retryAfter}`);
    assert.equal(error.rateLimit?.quotaRemaining, 0);
    assert.match(error.requestId ?? "", /^req_/);
    assert.deepEqual(slept.waits, [], "never slept");

    // With a cap above the announced wait the client would sleep it out.
    const patient = recorder();
    const p = new Client({ apiKey: key, sleep: patient.sleep, maxRetries: 1, maxRetryWait: 100_000 });
    await assert.rejects(p.properties.get("t-000"), QuotaExceededError);
    assert.equal(patient.waits.length, 1);
    assert.ok((patient.waits[0] ?? 0) > 86_000);
  });
});

describe("retries on answers the server cannot be made to give", () => {
  it("a 503 with Retry-After waits it plus 0-1 s, then succeeds", async () => {
    let first = true;
    const sent = counting(async (url, init) => {
      if (!first) return fetch(url, init);
      first = false;
      return errorAnswer(503, "service_unavailable", { "Retry-After": "5" });
    });
    const slept = recorder();
    const c = client({ fetch: sent.fetch, sleep: slept.sleep });
    const status = await c.auth.status();
    assert.equal(status.status, "active");
    assert.equal(sent.urls.length, 2);
    assert.equal(slept.waits.length, 1);
    assert.ok((slept.waits[0] ?? 0) >= 5 && (slept.waits[0] ?? 0) < 6);
  });

  it("a 503 without Retry-After backs off exponentially, then throws ServiceUnavailableError", async () => {
    const sent = counting(async () => errorAnswer(503, "service_unavailable"));
    const slept = recorder();
    const c = client({ fetch: sent.fetch, sleep: slept.sleep, maxRetries: 3 });
    const error = await c.markets.get("50010").catch((e: unknown) => e);
    assert.ok(error instanceof ServiceUnavailableError);
    assert.equal(sent.urls.length, 4);
    const [a = 0, b = 0, d = 0] = slept.waits;
    assert.ok(a >= 0.25 && a <= 0.5 && b >= 0.5 && b <= 1 && d >= 1 && d <= 2, String(slept.waits));
  });

  it("a 429 retried maxRetries times, then thrown", async () => {
    const sent = counting(async () => errorAnswer(429, "rate_limit_exceeded", { "Retry-After": "2" }));
    const slept = recorder();
    const error = await client({ fetch: sent.fetch, sleep: slept.sleep })
      .properties.search()
      .catch((e: unknown) => e);
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.retryAfter, 2);
    assert.equal(sent.urls.length, 3, "the first attempt and maxRetries = 2 retries");
    assert.equal(slept.waits.length, 2);
    assert.ok(slept.waits.every((w) => w >= 2 && w < 3));
    const none = counting(async () => errorAnswer(429, "rate_limit_exceeded", { "Retry-After": "2" }));
    await assert.rejects(client({ fetch: none.fetch, maxRetries: 0 }).properties.search(), RateLimitError);
    assert.equal(none.urls.length, 1);
  });

  it("a refused connection is retried with backoff, then thrown as APIConnectionError", async () => {
    const slept = recorder();
    const c = new Client({ baseUrl: `http://127.0.0.1:${await closedPort()}`, sleep: slept.sleep });
    const error = await c.properties.get("t-000").catch((e: unknown) => e);
    assert.ok(error instanceof APIConnectionError, String(error));
    assert.equal(error.code, "connection_error");
    assert.equal(error.status, null);
    assert.match(error.message, /ECONNREFUSED/);
    const [a = 0, b = 0] = slept.waits;
    assert.equal(slept.waits.length, 2);
    assert.ok(a >= 0.25 && a <= 0.5 && b >= 0.5 && b <= 1, String(slept.waits));
  });

  it("a timeout is an APIConnectionError", async () => {
    const hang: FetchLike = (_url, init) =>
      new Promise((_, fail) => init.signal?.addEventListener("abort", () => fail(init.signal?.reason)));
    const c = client({ fetch: hang, timeout: 0.05, maxRetries: 0 });
    const alive = setTimeout(() => {}, 5_000); // the timeout's own timer does not hold the loop
    const error = await c.auth.status().catch((e: unknown) => e);
    clearTimeout(alive);
    assert.ok(error instanceof APIConnectionError);
    assert.match(error.message, /timed out/);
  });
});

describe("retryWait", () => {
  const at = (status: number, code: string, retryAfter: number | null) =>
    new (status === 429 ? RateLimitError : status === 503 ? ServiceUnavailableError : PropdataError)(
      "x", { code, status, requestId: null, retryAfter },
    );

  it("is Retry-After plus uniform 0-1 s jitter on a 429", () => {
    assert.equal(retryWait(0, at(429, "rate_limit_exceeded", 7), 2, 60, () => 0), 7);
    assert.equal(retryWait(1, at(429, "rate_limit_exceeded", 7), 2, 60, () => 0.999), 7.999);
    assert.equal(retryWait(0, at(429, "rate_limit_exceeded", null), 2, 60, () => 0.5), 1.5);
  });

  it("is null past maxRetries, above maxRetryWait, and for other 4xx", () => {
    assert.equal(retryWait(2, at(429, "rate_limit_exceeded", 1), 2, 60), null);
    assert.equal(retryWait(0, at(429, "quota_exceeded", 61), 2, 60), null);
    assert.notEqual(retryWait(0, at(429, "rate_limit_exceeded", 60), 2, 60), null);
    assert.equal(retryWait(0, at(404, "not_found", null), 2, 60), null);
    assert.equal(retryWait(0, at(400, "invalid_parameter", 5), 2, 60), null);
  });

  it("backs off exponentially, capped at 8 s, on 503, 502, 504 and connection errors", () => {
    const waits = [0, 1, 2, 3, 4, 5, 6].map((n) => retryWait(n, at(503, "service_unavailable", null), 9, 60, () => 1));
    assert.deepEqual(waits, [0.5, 1, 2, 4, 8, 8, 8]);
    assert.equal(retryWait(0, at(502, "bad_gateway", null), 2, 60, () => 0), 0.25);
    const refused = new APIConnectionError("x", { code: "connection_error" });
    assert.equal(retryWait(1, refused, 2, 60, () => 0), 0.5);
    assert.equal(retryWait(5, refused, 9, 3, () => 1), 3, "never above maxRetryWait");
  });
});

// Every operation through openapi-fetch, typed by what openapi-typescript generated from the
// live /openapi.json (build/schema.d.ts): a success, a 400, a 401, a 404 where the operation
// has one, a 429 where it is metered (managing saved searches and webhooks is not), a 431 for
// those. `tsc --strict` checks these calls against the generated types; `node --test` runs
// them against the server test_generated_clients.py started.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import createClient, { type Middleware } from "openapi-fetch";

import type { components, paths } from "./build/schema.js";

type ErrorBody = components["schemas"]["ErrorBody"];

const baseUrl = required("PROPDATA_BASE_URL");
const api = client(required("PROPDATA_API_KEY"));
const spent = client(required("PROPDATA_SPENT_KEY"));
const anonymous = createClient<paths>({ baseUrl });

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function client(key: string) {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
}

/** Request headers over the server's 16 KB: a 431 from any operation. */
const tooLarge = { headers: { "X-Padding": "x".repeat(17_000) } };
/** Ids no one has (the document's examples of a 404). */
const noSearch = "srch_0123456789abcdef01234567";
const noHook = "wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze";
/** A webhook URL the served app allows (PROPDATA_WEBHOOK_ALLOWED_NETWORKS); nothing answers. */
const hook = "http://127.0.0.1:9/hook";

/** A query parameter no operation takes, added to every request of a client. */
const colour: Middleware = {
  onRequest({ request }) {
    const url = new URL(request.url);
    url.searchParams.set("colour", "red");
    return new Request(url, request);
  },
};

function refused(
  result: { error?: { error: ErrorBody }; response: Response },
  status: number,
  code: string,
): ErrorBody {
  assert.equal(result.response.status, status);
  assert.ok(result.error, `expected a ${status} body`);
  const body = result.error.error;
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.match(body.requestId, /^req_[0-9a-f]{16}$/);
  assert.equal(result.response.headers.get("X-Request-Id"), body.requestId);
  return body;
}

describe("properties", () => {
  it("searches", async () => {
    const ok = await api.GET("/v1/properties", { params: { query: { zipCode: "50010" } } });
    assert.ok(ok.data);
    assert.ok(ok.data.data.every((item) => item.address.zipCode === "50010"));
    assert.equal(ok.data.meta.total, ok.data.data.length);
    const bad = await api.GET("/v1/properties", { params: { query: { limit: 0 } } });
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "limit");
    refused(await anonymous.GET("/v1/properties"), 401, "missing_api_key");
    const limited = await spent.GET("/v1/properties");
    refused(limited, 429, "quota_exceeded");
    assert.ok(Number(limited.response.headers.get("Retry-After")) >= 1);
  });

  it("searches at the alias", async () => {
    const ok = await api.GET("/v1/properties/search", {
      params: { query: { city: "Ames", state: "IA", sort: "listPrice", order: "asc" } },
    });
    assert.ok(ok.data && ok.data.data.length > 0);
    // Ascending by listPrice; records without one come last.
    const prices = ok.data.data.map((item) => item.listPrice);
    const known = prices.filter((price): price is number => price !== null);
    assert.deepEqual(prices.slice(0, known.length), [...known].sort((a, b) => a - b));
    const bad = await api.GET("/v1/properties/search", { params: { query: { limit: 0 } } });
    refused(bad, 400, "invalid_parameter");
    refused(await anonymous.GET("/v1/properties/search"), 401, "missing_api_key");
    refused(await spent.GET("/v1/properties/search"), 429, "quota_exceeded");
  });

  it("looks up an address", async () => {
    const where = { streetAddress: "100 Oak Street", city: "Ames", state: "IA" };
    const ok = await api.GET("/v1/properties/lookup", { params: { query: where } });
    assert.equal(ok.data?.data.id, "t-000");
    const bad = await api.GET("/v1/properties/lookup", {
      params: { query: { ...where, state: "ZZ" } },
    });
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "state");
    const lost = await api.GET("/v1/properties/lookup", {
      params: { query: { ...where, streetAddress: "1 Nowhere Lane" } },
    });
    refused(lost, 404, "not_found");
    const ambiguous = await api.GET("/v1/properties/lookup", {
      params: { query: { streetAddress: "5 Broadway", city: "New York", state: "NY" } },
    });
    refused(ambiguous, 409, "ambiguous_address");
    refused(await anonymous.GET("/v1/properties/lookup", { params: { query: where } }), 401,
      "missing_api_key");
    refused(await spent.GET("/v1/properties/lookup", { params: { query: where } }), 429,
      "quota_exceeded");
  });

  for (const path of [
    "/v1/properties/{id}",
    "/v1/properties/{id}/history",
    "/v1/properties/{id}/valuation",
  ] as const) {
    it(`answers ${path}`, async () => {
      const ok = await api.GET(path, { params: { path: { id: "t-000" } } });
      assert.equal(ok.data?.data.id, "t-000");
      const bad = await api.GET(path, { params: { path: { id: "-x" } } });
      assert.equal(refused(bad, 400, "invalid_parameter").parameter, "id");
      refused(await api.GET(path, { params: { path: { id: "x-000" } } }), 404, "not_found");
      refused(await anonymous.GET(path, { params: { path: { id: "t-000" } } }), 401,
        "missing_api_key");
      refused(await spent.GET(path, { params: { path: { id: "t-000" } } }), 429,
        "quota_exceeded");
    });
  }

  it("reads a record's typed fields", async () => {
    const { data } = await api.GET("/v1/properties/{id}", { params: { path: { id: "t-000" } } });
    assert.ok(data);
    const home = data.data;
    assert.equal(home.status, "forSale");
    assert.equal(home.address.zipCode, "50010");
    assert.equal(home.priceHistory[0]?.event, "listedForSale");
    const trimmed = await api.GET("/v1/properties/{id}", {
      params: { path: { id: "t-000" }, query: { fields: "status" } },
    });
    assert.deepEqual(trimmed.data?.data, { id: "t-000", status: "forSale" });
  });

  it("lists changes", async () => {
    const ok = await api.GET("/v1/properties/changes", { params: { query: { limit: 5 } } });
    assert.ok(ok.data);
    assert.equal(ok.data.data.length, 5);
    assert.ok(ok.data.meta.nextCursor);
    const next = await api.GET("/v1/properties/changes", {
      params: { query: { since: ok.data.meta.nextCursor, limit: 5 } },
    });
    assert.ok(next.data);
    const bad = await api.GET("/v1/properties/changes", { params: { query: { since: "zz" } } });
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "since");
    refused(await anonymous.GET("/v1/properties/changes"), 401, "missing_api_key");
    refused(await spent.GET("/v1/properties/changes"), 429, "quota_exceeded");
  });
});

describe("markets", () => {
  it("answers a market and its history", async () => {
    const market = await api.GET("/v1/markets/{zipCode}", {
      params: { path: { zipCode: "50010" } },
    });
    assert.equal(market.data?.data.zipCode, "50010");
    const history = await api.GET("/v1/markets/{zipCode}/history", {
      params: { path: { zipCode: "50010" }, query: { months: 3 } },
    });
    assert.ok(history.data && history.data.data.history.length <= 3);
    for (const path of ["/v1/markets/{zipCode}", "/v1/markets/{zipCode}/history"] as const) {
      const bad = await api.GET(path, { params: { path: { zipCode: "5001" } } });
      assert.equal(refused(bad, 400, "invalid_parameter").parameter, "zipCode");
      refused(await api.GET(path, { params: { path: { zipCode: "99999" } } }), 404, "not_found");
      refused(await anonymous.GET(path, { params: { path: { zipCode: "50010" } } }), 401,
        "missing_api_key");
      refused(await spent.GET(path, { params: { path: { zipCode: "50010" } } }), 429,
        "quota_exceeded");
    }
    const months = await api.GET("/v1/markets/{zipCode}/history", {
      params: { path: { zipCode: "50010" }, query: { months: 0 } },
    });
    assert.equal(refused(months, 400, "invalid_parameter").parameter, "months");
  });

  it("searches markets", async () => {
    const ok = await api.GET("/v1/markets/search", { params: { query: { state: "IA" } } });
    assert.ok(ok.data && ok.data.data.every((market) => market.state === "IA"));
    const bad = await api.GET("/v1/markets/search", { params: { query: { limit: 0 } } });
    refused(bad, 400, "invalid_parameter");
    refused(await anonymous.GET("/v1/markets/search"), 401, "missing_api_key");
    refused(await spent.GET("/v1/markets/search"), 429, "quota_exceeded");
  });
});

describe("account and operations", () => {
  it("describes the key", async () => {
    const ok = await api.GET("/v1/auth/status");
    assert.equal(ok.data?.data.plan, "enterprise");
    const strict = client(required("PROPDATA_API_KEY"));
    strict.use(colour);
    const bad = await strict.GET("/v1/auth/status");
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "colour");
    refused(await anonymous.GET("/v1/auth/status"), 401, "missing_api_key");
    // Never counted, so never refused: a spent key still reads its status.
    assert.equal((await spent.GET("/v1/auth/status")).response.status, 200);
  });

  it("lists exports, never counted", async () => {
    const ok = await api.GET("/v1/exports");
    assert.ok(Array.isArray(ok.data?.data));
    const strict = client(required("PROPDATA_API_KEY"));
    strict.use(colour);
    refused(await strict.GET("/v1/exports"), 400, "invalid_parameter");
    refused(await anonymous.GET("/v1/exports"), 401, "missing_api_key");
    assert.equal((await spent.GET("/v1/exports")).response.status, 200);
  });

  it("reports health", async () => {
    const ok = await anonymous.GET("/health");
    assert.ok(ok.data);
    assert.ok(["ok", "degraded"].includes(ok.data.status));
    assert.equal(ok.data.checks["database"], "ok");
  });
});

describe("saved searches", () => {
  it("creates, lists, reads, changes and deletes one", async () => {
    const body = { name: "x", filters: { zipCode: "50010" } };
    const made = await api.POST("/v1/searches", { body });
    assert.equal(made.response.status, 201);
    assert.ok(made.data);
    const search = made.data.data;
    assert.match(search.id, /^srch_/);
    assert.deepEqual(search.filters, { zipCode: "50010" });
    assert.ok(search.matchCount > 0);
    const bad = await api.POST("/v1/searches", { body: { ...body, name: "" } });
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "name");
    refused(await anonymous.POST("/v1/searches", { body }), 401, "missing_api_key");
    refused(await api.POST("/v1/searches", { body, ...tooLarge }), 431, "headers_too_large");
    // Never counted, so never refused for a spent quota.
    assert.equal((await spent.POST("/v1/searches", { body })).response.status, 201);

    const listed = await api.GET("/v1/searches", { params: { query: { limit: 100 } } });
    assert.ok(listed.data?.data.some((item) => item.id === search.id));
    const badList = await api.GET("/v1/searches", { params: { query: { limit: 0 } } });
    assert.equal(refused(badList, 400, "invalid_parameter").parameter, "limit");
    refused(await anonymous.GET("/v1/searches"), 401, "missing_api_key");
    refused(await api.GET("/v1/searches", tooLarge), 431, "headers_too_large");

    const path = { params: { path: { id: search.id } } };
    const missing = { params: { path: { id: noSearch } } };
    assert.equal((await api.GET("/v1/searches/{id}", path)).data?.data.id, search.id);
    const badId = await api.GET("/v1/searches/{id}", { params: { path: { id: "x y" } } });
    assert.equal(refused(badId, 400, "invalid_parameter").parameter, "id");
    refused(await api.GET("/v1/searches/{id}", missing), 404, "not_found");
    refused(await anonymous.GET("/v1/searches/{id}", path), 401, "missing_api_key");
    refused(await api.GET("/v1/searches/{id}", { ...path, ...tooLarge }), 431,
      "headers_too_large");

    const renamed = await api.PATCH("/v1/searches/{id}", { ...path, body: { name: "y" } });
    assert.equal(renamed.data?.data.name, "y");
    const badChange = await api.PATCH("/v1/searches/{id}", { ...path, body: { name: "" } });
    assert.equal(refused(badChange, 400, "invalid_parameter").parameter, "name");
    refused(await api.PATCH("/v1/searches/{id}", { ...missing, body: { name: "y" } }), 404,
      "not_found");
    refused(await anonymous.PATCH("/v1/searches/{id}", { ...path, body: { name: "y" } }), 401,
      "missing_api_key");
    refused(await api.PATCH("/v1/searches/{id}", { ...path, body: { name: "y" }, ...tooLarge }),
      431, "headers_too_large");

    const badDelete = await api.DELETE("/v1/searches/{id}", { params: { path: { id: "x y" } } });
    assert.equal(refused(badDelete, 400, "invalid_parameter").parameter, "id");
    refused(await anonymous.DELETE("/v1/searches/{id}", path), 401, "missing_api_key");
    refused(await api.DELETE("/v1/searches/{id}", { ...path, ...tooLarge }), 431,
      "headers_too_large");
    const deleted = await api.DELETE("/v1/searches/{id}", path);
    assert.equal(deleted.response.status, 204);
    refused(await api.DELETE("/v1/searches/{id}", path), 404, "not_found");
  });
});

describe("events", () => {
  it("lists events", async () => {
    const ok = await api.GET("/v1/events", { params: { query: { limit: 5 } } });
    assert.ok(ok.data);
    assert.ok(ok.data.meta.nextCursor);
    const bad = await api.GET("/v1/events", { params: { query: { since: "zz" } } });
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "since");
    refused(await anonymous.GET("/v1/events"), 401, "missing_api_key");
    refused(await spent.GET("/v1/events"), 429, "quota_exceeded");
    refused(await api.GET("/v1/events", tooLarge), 431, "headers_too_large");
  });
});

describe("webhooks", () => {
  it("creates, lists, reads, changes, tests, replays and deletes an endpoint", async () => {
    const made = await api.POST("/v1/webhooks", { body: { url: hook } });
    assert.equal(made.response.status, 201);
    assert.ok(made.data);
    const endpoint = made.data.data;
    assert.match(endpoint.id, /^wh_/);
    assert.match(endpoint.secret, /^whsec_/);
    assert.equal(endpoint.status, "enabled");
    const bad = await api.POST("/v1/webhooks", { body: { url: "https://10.0.0.5/hook" } });
    assert.equal(refused(bad, 400, "invalid_parameter").parameter, "url");
    refused(await anonymous.POST("/v1/webhooks", { body: { url: hook } }), 401,
      "missing_api_key");
    refused(await api.POST("/v1/webhooks", { body: { url: hook }, ...tooLarge }), 431,
      "headers_too_large");

    const listed = await api.GET("/v1/webhooks");
    assert.ok(listed.data?.data.some((item) => item.id === endpoint.id));
    const badList = await api.GET("/v1/webhooks", { params: { query: { limit: 0 } } });
    assert.equal(refused(badList, 400, "invalid_parameter").parameter, "limit");
    refused(await anonymous.GET("/v1/webhooks"), 401, "missing_api_key");
    refused(await api.GET("/v1/webhooks", tooLarge), 431, "headers_too_large");

    const path = { params: { path: { id: endpoint.id } } };
    const missing = { params: { path: { id: noHook } } };
    const badPath = { params: { path: { id: "x y" } } };
    const got = await api.GET("/v1/webhooks/{id}", path);
    assert.equal(got.data?.data.url, hook);
    assert.ok(got.data && !("secret" in got.data.data));

    const changed = await api.PATCH("/v1/webhooks/{id}", {
      ...path, body: { description: "x", status: "enabled" },
    });
    assert.equal(changed.data?.data.description, "x");
    const badChange = await api.PATCH("/v1/webhooks/{id}", {
      ...path, body: { url: "https://10.0.0.5/hook" },
    });
    assert.equal(refused(badChange, 400, "invalid_parameter").parameter, "url");
    refused(await api.PATCH("/v1/webhooks/{id}", { ...missing, body: {} }), 404, "not_found");

    const rotated = await api.POST("/v1/webhooks/{id}/rotate-secret", {
      ...path, body: { graceSeconds: 60 },
    });
    assert.match(rotated.data?.data.secret ?? "", /^whsec_/);
    const badRotation = await api.POST("/v1/webhooks/{id}/rotate-secret", {
      ...path, body: { graceSeconds: -1 },
    });
    assert.equal(refused(badRotation, 400, "invalid_parameter").parameter, "graceSeconds");
    refused(await api.POST("/v1/webhooks/{id}/rotate-secret", { ...missing, body: null }), 404,
      "not_found");

    const tested = await api.POST("/v1/webhooks/{id}/test", path);
    assert.equal(tested.response.status, 202);
    assert.equal(tested.data?.data.queued, 1);
    refused(await api.POST("/v1/webhooks/{id}/test", missing), 404, "not_found");

    const deliveries = await api.GET("/v1/webhooks/{id}/deliveries", path);
    assert.ok(deliveries.data);
    refused(await api.GET("/v1/webhooks/{id}/deliveries", missing), 404, "not_found");

    const cursor = (await api.GET("/v1/events")).data?.meta.nextCursor ?? "";
    const replayed = await api.POST("/v1/webhooks/{id}/replay", {
      ...path, body: { since: cursor },
    });
    assert.equal(replayed.response.status, 202);
    assert.equal(replayed.data?.data.queued, 0);
    const badReplay = await api.POST("/v1/webhooks/{id}/replay", {
      ...path, body: { since: "zz" },
    });
    assert.equal(refused(badReplay, 400, "invalid_parameter").parameter, "since");
    refused(await api.POST("/v1/webhooks/{id}/replay", { ...missing, body: { since: cursor } }),
      404, "not_found");

    // Every operation on one endpoint: a bad id, no key, headers too large.
    for (const call of [
      (options: typeof path) => api.GET("/v1/webhooks/{id}", options),
      (options: typeof path) => api.PATCH("/v1/webhooks/{id}", { ...options, body: {} }),
      (options: typeof path) => api.POST("/v1/webhooks/{id}/rotate-secret",
        { ...options, body: null }),
      (options: typeof path) => api.POST("/v1/webhooks/{id}/test", options),
      (options: typeof path) => api.GET("/v1/webhooks/{id}/deliveries", options),
      (options: typeof path) => api.POST("/v1/webhooks/{id}/replay",
        { ...options, body: { since: cursor } }),
      (options: typeof path) => api.DELETE("/v1/webhooks/{id}", options),
    ]) {
      assert.equal(refused(await call(badPath), 400, "invalid_parameter").parameter, "id");
      refused(await call({ ...path, ...tooLarge } as typeof path), 431, "headers_too_large");
    }
    for (const call of [
      () => anonymous.GET("/v1/webhooks/{id}", path),
      () => anonymous.PATCH("/v1/webhooks/{id}", { ...path, body: {} }),
      () => anonymous.POST("/v1/webhooks/{id}/rotate-secret", { ...path, body: null }),
      () => anonymous.POST("/v1/webhooks/{id}/test", path),
      () => anonymous.GET("/v1/webhooks/{id}/deliveries", path),
      () => anonymous.POST("/v1/webhooks/{id}/replay", { ...path, body: { since: cursor } }),
      () => anonymous.DELETE("/v1/webhooks/{id}", path),
    ]) {
      refused(await call(), 401, "missing_api_key");
    }

    const deleted = await api.DELETE("/v1/webhooks/{id}", path);
    assert.equal(deleted.response.status, 204);
    refused(await api.DELETE("/v1/webhooks/{id}", path), 404, "not_found");
  });
});

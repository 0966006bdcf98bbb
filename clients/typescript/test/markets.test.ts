// client.markets and client.auth against the live server.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { InvalidParameterError, NotFoundError } from "@propdata/client";

import { client, counting, ownServer } from "./harness.js";

async function someZip(): Promise<string> {
  const page = await client().markets.search({ limit: 1 });
  const market = page.data[0];
  assert.ok(market, "the server has market data");
  return market.zipCode;
}

describe("markets.get", () => {
  it("returns the snapshot of a ZIP code", async () => {
    const zip = await someZip();
    const market = await client().markets.get(zip);
    assert.equal(market.zipCode, zip);
    assert.match(market.snapshot.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(typeof market.snapshot.activeListings, "number");
  });

  it("reads the catalogue's market", ownServer, async () => {
    const market = await client().markets.get("50010");
    assert.equal(market.city, "Ames");
    assert.equal(market.state, "IA");
    assert.equal(market.snapshot.date, "2026-11-21");
  });

  it("throws InvalidParameterError for a malformed ZIP code, NotFoundError for an unknown one", async () => {
    const c = client();
    const bad = await c.markets.get("5001").catch((e: unknown) => e);
    assert.ok(bad instanceof InvalidParameterError);
    assert.equal(bad.parameter, "zipCode");
    const none = await c.markets.get("99999").catch((e: unknown) => e);
    assert.ok(none instanceof NotFoundError);
    assert.equal(none.code, "not_found");
  });
});

describe("markets.history", () => {
  it("returns up to `months` entries, newest first", async () => {
    const zip = await someZip();
    const c = client();
    const three = await c.markets.history(zip, { months: 3 });
    assert.equal(three.zipCode, zip);
    assert.ok(three.history.length <= 3);
    const months = three.history.map((h) => h.month);
    assert.ok(months.every((m) => /^\d{4}-\d{2}$/.test(m)));
    assert.deepEqual(months, [...months].sort().reverse());
    const year = await c.markets.history(zip);
    assert.ok(year.history.length <= 12);
  });

  it("starts at the as-of month", ownServer, async () => {
    const history = await client().markets.history("50010", { months: 2 });
    assert.deepEqual(history.history.map((h) => h.month), ["2026-11", "2026-10"]);
  });

  it("throws InvalidParameterError for months outside 1-60", async () => {
    const zip = await someZip();
    for (const months of [0, 61]) {
      const error = await client().markets.history(zip, { months }).catch((e: unknown) => e);
      assert.ok(error instanceof InvalidParameterError);
      assert.equal(error.parameter, "months");
      assert.equal(error.status, 400);
      assert.equal(error.code, "invalid_parameter");
    }
  });
});

describe("markets.search and markets.searchAll", () => {
  it("search returns a page of markets", async () => {
    const page = await client().markets.search({ limit: 2 });
    assert.equal(page.meta.limit, 2);
    assert.ok(page.data.length <= 2);
    assert.ok(page.data.every((m) => /^\d{5}$/.test(m.zipCode) && m.snapshot));
  });

  it("search filters by state and ZIP prefix", ownServer, async () => {
    const c = client();
    const iowa = await c.markets.search({ state: "IA" });
    assert.deepEqual(iowa.data.map((m) => m.zipCode), ["50010", "50112"]);
    const prefix = await c.markets.search({ zipCode: "100" });
    assert.deepEqual(prefix.data.map((m) => m.zipCode), ["10001", "10002"]);
  });

  it("searchAll iterates every page", async () => {
    const { total } = (await client().markets.search({ limit: 1 })).meta;
    const sent = counting();
    const zips: string[] = [];
    for await (const market of client({ fetch: sent.fetch }).markets.searchAll({ pageSize: 1 })) {
      zips.push(market.zipCode);
    }
    assert.ok(total >= 2, "several pages");
    assert.equal(zips.length, total);
    assert.equal(new Set(zips).size, total);
    assert.equal(sent.urls.length, total);
  });

  it("searchAll over the catalogue's four ZIP codes", ownServer, async () => {
    const zips: string[] = [];
    for await (const market of client().markets.searchAll({ pageSize: 3 })) zips.push(market.zipCode);
    assert.deepEqual(zips, ["10001", "10002", "50010", "50112"]);
  });
});

describe("auth.status", () => {
  it("describes the calling key", async () => {
    const status = await client().auth.status();
    assert.match(status.keyId, /^key_/);
    assert.equal(status.status, "active");
    assert.equal(typeof status.limits.perMinute, "number");
    assert.equal(typeof status.usage.minute.used, "number");
  });

  it("shows the test key's custom limits", ownServer, async () => {
    const status = await client().auth.status();
    assert.equal(status.plan, "enterprise");
    assert.equal(status.limits.perMinute, 1_000_000);
    assert.equal(status.limits.daily, 100_000_000);
    assert.ok(status.usage.day !== null);
  });
});

// client.properties against the live server: every method, paging, and the errors they throw.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  AmbiguousAddressError,
  InvalidParameterError,
  NotFoundError,
  PropdataError,
  type Client,
  type LookupParams,
  type PropertySummary,
} from "@propdata/client";

import { client, counting, ownServer, recorder } from "./harness.js";

async function someProperty(): Promise<PropertySummary> {
  const page = await client().properties.search({ limit: 25 });
  const item = page.data.find((p) => p.address.streetAddress !== null);
  assert.ok(item, "the server has a property with a street address");
  return item;
}

/** The error `properties.lookup(where)` rejects with (its answer, should it resolve). */
async function lookupError(where: LookupParams, c: Client = client()): Promise<unknown> {
  return c.properties.lookup(where).catch((e: unknown) => e);
}

describe("properties.get", () => {
  it("returns the full record of an id", async () => {
    const { id } = await someProperty();
    const home = await client().properties.get(id);
    assert.equal(home.id, id);
    assert.match(home.address.zipCode, /^\d{5}$/);
    assert.ok(Array.isArray(home.priceHistory) && Array.isArray(home.taxHistory));
    assert.match(home.lastUpdated, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  it("reads the catalogue's record field by field", ownServer, async () => {
    const home = await client().properties.get("t-000");
    assert.equal(home.status, "forSale");
    assert.equal(home.listPrice, 100_000);
    assert.deepEqual(home.address, {
      streetAddress: "100 Oak Street", city: "Ames", state: "IA", zipCode: "50010",
      county: "Story", fipsCode: "19169",
    });
    assert.equal(home.propertyType, "singleFamily");
    assert.deepEqual(home.priceHistory[0], {
      date: "2026-01-01", event: "listedForSale", price: 100_000, source: "mls",
    });
    assert.deepEqual(home.scores, { walkability: 55, transit: 30, bike: 60 });
  });

  it("throws NotFoundError for an unknown id, without retrying", async () => {
    const sent = counting();
    const slept = recorder();
    const c = client({ fetch: sent.fetch, sleep: slept.sleep });
    const error = await c.properties.get("no-such-property").catch((e: unknown) => e);
    assert.ok(error instanceof NotFoundError);
    assert.ok(error instanceof PropdataError);
    assert.equal(error.code, "not_found");
    assert.equal(error.status, 404);
    assert.match(error.requestId ?? "", /^req_[0-9a-f]{16}$/);
    assert.match(error.message, /no-such-property/);
    assert.equal(sent.urls.length, 1);
    assert.deepEqual(slept.waits, []);
  });

  it("encodes the id as one path segment", async () => {
    const sent = counting();
    await assert.rejects(client({ fetch: sent.fetch }).properties.get("a/b?c"), NotFoundError);
    assert.match(sent.urls[0] ?? "", /\/v1\/properties\/a%2Fb%3Fc$/);
    await assert.rejects(client().properties.get(""), TypeError);
  });
});

describe("properties.lookup", () => {
  it("finds the property at an address", async () => {
    const item = await someProperty();
    const { streetAddress, city, state, zipCode } = item.address;
    const found = await client().properties.lookup({
      streetAddress: streetAddress ?? "", city, state, zipCode,
    });
    assert.equal(found.id, item.id);
    assert.deepEqual(Object.keys(found).sort(), [
      "address", "bathroomsTotal", "bedroomsTotal", "id", "lastUpdated", "listPrice",
      "livingArea", "status",
    ]);
  });

  it("finds a property by its parcel number, with the assessor's fields", ownServer, async () => {
    const found = await client().properties.lookup({ parcelId: "0907202030" });
    assert.equal(found.id, "t-000");
    const home = await client().properties.get("t-000");
    assert.deepEqual(
      [home.parcelId, home.garageSpaces, home.basementFinishedArea, home.fireplaces,
        home.overallQuality, home.overallCondition],
      ["0907202030", 2, 600, 1, 6, 5],
    );
  });

  it("matches after USPS normalisation", ownServer, async () => {
    const found = await client().properties.lookup({
      streetAddress: "100 OAK ST", city: "ames", state: "ia",
    });
    assert.equal(found.id, "t-000");
  });

  it("throws AmbiguousAddressError with the candidate ZIP codes", ownServer, async () => {
    const c = client();
    const where = { streetAddress: "5 Broadway", city: "New York", state: "NY" };
    const error = await lookupError(where, c);
    assert.ok(error instanceof AmbiguousAddressError, String(error));
    assert.equal(error.status, 409);
    assert.equal(error.code, "ambiguous_address");
    assert.deepEqual(error.zipCodes, ["10001", "10002"]);
    assert.deepEqual(error.propertyIds, []);
    assert.match(error.requestId ?? "", /^req_/);
    const chosen = await c.properties.lookup({ ...where, zipCode: error.zipCodes[1] });
    assert.equal(chosen.id, "t-041");
    assert.deepEqual(
      error.candidates.map((x) => [x.id, x.address.zipCode]),
      [["t-040", "10001"], ["t-041", "10002"]],
    );
  });

  it("throws NotFoundError with the candidates for another unit", ownServer, async () => {
    const error = await lookupError({ streetAddress: "100 Oak Street Apt 9", city: "Ames", state: "IA" });
    assert.ok(error instanceof NotFoundError, String(error));
    assert.deepEqual(error.candidates, [
      { id: "t-000", address: { streetAddress: "100 Oak Street", city: "Ames", state: "IA", zipCode: "50010" } },
    ]);
    const none = await lookupError({ streetAddress: "1 Nowhere Lane", city: "Ames", state: "IA" });
    assert.ok(none instanceof NotFoundError);
    assert.deepEqual(none.candidates, []);
  });

  it("finds by ZIP+4 without a city, or by one line", ownServer, async () => {
    const c = client();
    const byZip = await c.properties.lookup({ streetAddress: "100 Oak St", zipCode: "50010-1234" });
    assert.equal(byZip.id, "t-000");
    const byLine = await c.properties.lookup({ address: "100 Oak St, Ames, IA 50010" });
    assert.equal(byLine.id, "t-000");
  });

  it("throws NotFoundError when nothing matches exactly", async () => {
    const error = await lookupError({ streetAddress: "1 Nowhere Lane", city: "Nowhere", state: "IA" });
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.code, "not_found");
  });

  it("throws InvalidParameterError naming a bad parameter", async () => {
    const error = await lookupError({ streetAddress: "1 Main St", city: "Ames", state: "ZZ" });
    assert.ok(error instanceof InvalidParameterError);
    assert.equal(error.status, 400);
    assert.equal(error.parameter, "state");
  });
});

describe("properties.search", () => {
  it("returns one page with its meta, filtered and sorted", async () => {
    const page = await client().properties.search({
      state: "ia", sort: "listPrice", order: "asc", limit: 5,
    });
    assert.equal(page.meta.limit, 5);
    assert.equal(page.meta.offset, 0);
    assert.ok(page.data.length <= 5);
    assert.ok(page.data.every((p) => p.address.state === "IA"));
    const prices = page.data.map((p) => p.listPrice).filter((p): p is number => p !== null);
    assert.deepEqual(prices, [...prices].sort((a, b) => a - b));
  });

  it("counts the catalogue's matches", ownServer, async () => {
    const page = await client().properties.search({ state: "IA" });
    assert.equal(page.meta.total, 27);
    const rentals = await client().properties.search({ status: "forRent", zipCode: "50010" });
    assert.ok(rentals.meta.total > 0);
    assert.ok(rentals.data.every((p) => p.status === "forRent" && p.address.zipCode === "50010"));
  });

  it("throws InvalidParameterError with the parameter", async () => {
    const c = client();
    const range = await c.properties.search({ minPrice: 10, maxPrice: 5 }).catch((e: unknown) => e);
    assert.ok(range instanceof InvalidParameterError);
    assert.equal(range.parameter, "minPrice");
    const limit = await c.properties.search({ limit: 0 }).catch((e: unknown) => e);
    assert.ok(limit instanceof InvalidParameterError);
    assert.equal(limit.parameter, "limit");
  });

  it("refuses an unknown parameter before sending it", async () => {
    const sent = counting();
    const { properties } = client({ fetch: sent.fetch });
    const search = properties.search.bind(properties) as (p: object) => Promise<unknown>;
    await assert.rejects(search({ zip: "50010" }), /unknown parameter "zip"/);
    await assert.rejects(search({ minBeds: true }), TypeError);
    assert.equal(sent.urls.length, 0);
  });
});

describe("properties.searchAll", () => {
  it("iterates every item of every page by cursor, without the caller touching one", async () => {
    const c = client();
    const { total } = (await c.properties.search({ state: "IA", limit: 1 })).meta;
    const sent = counting();
    const all = client({ fetch: sent.fetch });
    const ids: string[] = [];
    for await (const item of all.properties.searchAll({ state: "IA", pageSize: 5 })) {
      ids.push(item.id);
    }
    assert.ok(total > 10, "several pages");
    assert.equal(ids.length, total);
    assert.equal(new Set(ids).size, total);
    assert.equal(sent.urls.length, Math.ceil(total / 5));
    // the first page at offset 0, then each page's meta.nextCursor and no offset
    const queries = sent.urls.map((u) => new URL(u).searchParams);
    assert.equal(queries[0]?.get("offset"), "0");
    assert.ok(queries.slice(1).every((q) => q.get("offset") === null && q.get("cursor")));
    assert.equal(new Set(queries.slice(1).map((q) => q.get("cursor"))).size, queries.length - 1);
    assert.ok(sent.urls.every((u) => new URL(u).searchParams.get("limit") === "5"));
  });

  it("walks the same items as the pages in order", ownServer, async () => {
    const c = client();
    const first = await c.properties.search({ sort: "listPrice", order: "desc", limit: 100 });
    const walked: string[] = [];
    for await (const item of c.properties.searchAll({ sort: "listPrice", order: "desc", pageSize: 7 })) {
      walked.push(item.id);
    }
    assert.equal(walked.length, 42);
    assert.deepEqual(walked, first.data.map((p) => p.id));
  });

  it("stops early when the caller breaks", async () => {
    const sent = counting();
    let seen = 0;
    for await (const _ of client({ fetch: sent.fetch }).properties.searchAll({ pageSize: 2 })) {
      if (++seen === 3) break;
    }
    assert.equal(sent.urls.length, 2);
  });

  it("takes pageSize, not limit or offset", async () => {
    const { properties } = client();
    const searchAll = properties.searchAll.bind(properties) as (p: object) => AsyncGenerator<unknown>;
    await assert.rejects(searchAll({ offset: 5 }).next(), /pass pageSize, not offset/);
    await assert.rejects(searchAll({ limit: 5 }).next(), /pass pageSize, not limit/);
  });
});

describe("properties.history and properties.valuation", () => {
  it("return the histories and the valuation of a property", async () => {
    const { id } = await someProperty();
    const c = client();
    const history = await c.properties.history(id);
    assert.equal(history.id, id);
    assert.ok(Array.isArray(history.priceHistory) && Array.isArray(history.taxHistory));
    const valuation = await c.properties.valuation(id);
    assert.equal(valuation.id, id);
    assert.ok(Array.isArray(valuation.comparables));
    assert.ok(valuation.comparables.length <= 5);
  });

  it("read the catalogue's values", ownServer, async () => {
    const c = client();
    const history = await c.properties.history("t-001");
    assert.deepEqual(history.priceHistory.map((e) => e.event), ["sold", "pendingSale", "listedForSale"]);
    assert.deepEqual(history.taxHistory, [{ year: 2025, taxPaid: 3100, assessedValue: 210000 }]);
    const valuation = await c.properties.valuation("t-000");
    assert.deepEqual(valuation.valueEstimate, { value: 245000, low: 225000, high: 265000, asOfDate: "2026-11-21" });
    await assert.rejects(c.properties.valuation("no-such-property"), NotFoundError);
  });
});

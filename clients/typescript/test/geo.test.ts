// Radius and box search, sort=distance with distanceMiles, and cursor paging against the live
// server. The test catalogue's 42 records all stand at 42.03, -93.62.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { InvalidParameterError, type PropertySearchParams } from "@propdata/client";

import { client, counting, ownServer } from "./harness.js";

const ALL = 42;

function rejectsNaming(promise: Promise<unknown>, parameter: string) {
  return assert.rejects(promise, (error) => {
    assert.ok(error instanceof InvalidParameterError, String(error));
    assert.equal(error.parameter, parameter);
    return true;
  });
}

describe("radius and box", () => {
  it("finds the records within a radius, with their distance", ownServer, async () => {
    const c = client();
    // 0.01 degree of latitude north of the catalogue: 0.69 miles
    const near = await c.properties.search({ latitude: 42.04, longitude: -93.62, radius: 1, sort: "distance", limit: 50 });
    assert.equal(near.meta.total, ALL);
    assert.ok(near.data.every((item) => item.distanceMiles === 0.69));
    const none = await c.properties.search({ latitude: 42.04, longitude: -93.62, radius: 0.5 });
    assert.equal(none.meta.total, 0);
    assert.equal(none.meta.nextCursor, null);
    const cut = await c.properties.search({
      latitude: 42.04, longitude: -93.62, radius: 1, limit: 1, fields: ["distanceMiles"],
    });
    assert.deepEqual(Object.keys(cut.data[0] ?? {}).sort(), ["distanceMiles", "id"]);
    const plain = await c.properties.search({ limit: 3 });
    assert.ok(plain.data.every((item) => !("distanceMiles" in item)), "absent without a radius");
  });

  it("finds the records in a box, given as numbers or as the wire's string", ownServer, async () => {
    const c = client();
    const box = await c.properties.search({ bbox: [-94, 42, -93, 43], limit: 1 });
    assert.equal(box.meta.total, ALL);
    assert.ok(box.data.every((item) => !("distanceMiles" in item)), "absent on a box search");
    const same = await c.properties.search({ bbox: "-94,42,-93,43", limit: 1 });
    assert.equal(same.meta.total, ALL);
    const elsewhere = await c.properties.search({ bbox: [-90.05, 40.95, -89.95, 41.05] });
    assert.equal(elsewhere.meta.total, 0);
    await assert.rejects(c.properties.search({ bbox: [1, 2, 3] }), TypeError);
  });

  it("the server refuses what does not go together", async () => {
    const c = client();
    const cases: [PropertySearchParams, string][] = [
      [{ latitude: 42, longitude: -93 }, "radius"],
      [{ latitude: 42, longitude: -93, radius: 101 }, "radius"],
      [{ bbox: [-93, 42, -94, 43] }, "bbox"],
      [{ bbox: [-94, 42, -93, 43], latitude: 42, longitude: -93, radius: 1 }, "bbox"],
      [{ sort: "distance" }, "sort"],
    ];
    for (const [params, parameter] of cases) await rejectsNaming(c.properties.search(params), parameter);
  });
});

describe("cursor paging", () => {
  it("follows meta.nextCursor to the last page", ownServer, async () => {
    const c = client();
    const query = { sort: "listPrice", order: "asc", limit: 20 } as const;
    const first = await c.properties.search(query);
    assert.equal(typeof first.meta.nextCursor, "string");
    const second = await c.properties.search({ ...query, cursor: first.meta.nextCursor as string });
    const third = await c.properties.search({ ...query, cursor: second.meta.nextCursor as string });
    assert.equal(third.meta.nextCursor, null);
    const ids = [first, second, third].flatMap((p) => p.data.map((item) => item.id));
    assert.equal(ids.length, ALL);
    assert.equal(new Set(ids).size, ALL);
    const whole = await c.properties.search({ ...query, limit: 100 });
    assert.deepEqual(ids, whole.data.map((item) => item.id));
    const cursor = first.meta.nextCursor as string;
    await rejectsNaming(c.properties.search({ ...query, cursor, offset: 20 }), "offset");
    await rejectsNaming(c.properties.search({ ...query, cursor: "not-a-cursor" }), "cursor");
    await rejectsNaming(c.properties.search({ ...query, cursor, sort: "livingArea" }), "cursor");
  });

  it("searchAll walks a radius search by cursor, nearest first", ownServer, async () => {
    const sent = counting();
    const c = client({ fetch: sent.fetch });
    const items = [];
    for await (const item of c.properties.searchAll({ latitude: 42.03, longitude: -93.62, radius: 1, sort: "distance", pageSize: 10 })) {
      items.push(item);
    }
    assert.equal(items.length, ALL);
    assert.equal(new Set(items.map((item) => item.id)).size, ALL);
    assert.ok(items.every((item) => item.distanceMiles === 0));
    assert.equal(sent.urls.length, 5);
    assert.ok(sent.urls.slice(1).every((u) => new URL(u).searchParams.get("cursor")));
    await assert.rejects(c.properties.searchAll({ cursor: "x" } as never).next(), /not cursor/);
  });
});

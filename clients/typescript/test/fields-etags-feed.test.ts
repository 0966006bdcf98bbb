// fields, conditional requests (ETag / 304) and the change feed against the live server.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type FetchLike, InvalidParameterError, type Selected, type Property } from "@propdata/client";

import { client, loadRecord, ownServer } from "./harness.js";

/** The global fetch, recording each request's headers and each answer's status and ETag. */
function recording() {
  const sent: { url: string; ifNoneMatch: string | null }[] = [];
  const answers: { status: number; etag: string | null }[] = [];
  const fetchLike: FetchLike = async (url, init) => {
    sent.push({ url, ifNoneMatch: init.headers["If-None-Match"] ?? null });
    const response = await fetch(url, init);
    answers.push({ status: response.status, etag: response.headers.get("ETag") });
    return response;
  };
  return { sent, answers, fetch: fetchLike };
}

describe("fields", () => {
  it("cuts every property read down to the names asked and id", ownServer, async () => {
    const c = client();
    const home: Selected<Property> = await c.properties.get("t-001", {
      fields: ["listPrice", "address.zipCode"],
    });
    assert.deepEqual(home, { id: "t-001", listPrice: 110_000, address: { zipCode: "50112" } });
    assert.deepEqual(await c.properties.get("t-001", { fields: "status" }), {
      id: "t-001",
      status: "recentlySold",
    });
    assert.deepEqual(await c.properties.history("t-001", { fields: ["priceHistory.event"] }), {
      id: "t-001",
      priceHistory: [{ event: "sold" }, { event: "pendingSale" }, { event: "listedForSale" }],
    });
    assert.deepEqual(await c.properties.valuation("t-001", { fields: ["valueEstimate.value"] }), {
      id: "t-001",
      valueEstimate: { value: 245_000 },
    });
    const match = await c.properties.lookup({
      streetAddress: "101 Oak Street", city: "Grinnell", state: "IA", fields: ["id"],
    });
    assert.deepEqual(match, { id: "t-001" });
    const full = await c.properties.get("t-001"); // without fields: the whole Property
    assert.equal(full.address.county, "Poweshiek");
  });

  it("applies to every item of a search and searchAll", ownServer, async () => {
    const c = client();
    const page = await c.properties.search({ state: "IA", limit: 5, fields: ["listPrice"] });
    assert.equal(page.meta.total, 27);
    for (const item of page.data) assert.deepEqual(Object.keys(item).sort(), ["id", "listPrice"]);
    const states = new Set<string | undefined>();
    let count = 0;
    for await (const item of c.properties.searchAll({ pageSize: 10, fields: ["address.state"] })) {
      assert.deepEqual(Object.keys(item).sort(), ["address", "id"]);
      states.add(item.address?.state);
      count++;
    }
    assert.equal(count, 42);
    assert.deepEqual([...states].sort(), ["IA", "NY"]);
  });

  it("an unknown name is a 400 naming fields", async () => {
    for (const bad of [["price"], ["list_price"], []]) {
      await assert.rejects(client().properties.get("t-001", { fields: bad }), (error) => {
        assert.ok(error instanceof InvalidParameterError);
        assert.equal(error.parameter, "fields");
        return true;
      });
    }
  });
});

describe("conditional requests", () => {
  it("asks again with If-None-Match and answers the 304 from memory", async () => {
    const rec = recording();
    const c = client({ fetch: rec.fetch });
    const first = await c.properties.get("t-002");
    const tag = c.lastEtag;
    assert.ok(tag?.startsWith('"'));
    assert.equal(c.lastNotModified, false);
    assert.equal(rec.sent[0]?.ifNoneMatch, null);
    const again = await c.properties.get("t-002");
    assert.equal(rec.sent[1]?.ifNoneMatch, tag);
    assert.deepEqual(rec.answers, [{ status: 200, etag: tag }, { status: 304, etag: tag }]);
    assert.deepEqual(again, first);
    assert.equal(c.lastNotModified, true);
    assert.ok(c.lastRateLimit !== null, "a 304 carries the rate headers");
    const reads: (() => Promise<unknown>)[] = [
      () => c.properties.search({ zipCode: "50010", limit: 3 }),
      () => c.properties.get("t-002", { fields: ["listPrice"] }),
      () => c.markets.get("50010"),
      () => c.properties.changes({ limit: 5 }),
    ];
    for (const read of reads) {
      assert.deepEqual(await read(), await read());
      assert.equal(c.lastNotModified, true);
    }
    assert.deepEqual(rec.answers.slice(2).map((a) => a.status), [200, 304, 200, 304, 200, 304, 200, 304]);
    await c.auth.status();
    await c.auth.status();
    assert.equal(rec.sent.at(-1)?.ifNoneMatch, null, "auth status has no ETag");
    assert.equal(c.lastEtag, null);
  });

  it("can be turned off, and keeps at most etagCache answers", async () => {
    const rec = recording();
    const off = client({ fetch: rec.fetch, etagCache: 0 });
    await off.properties.get("t-003");
    await off.properties.get("t-003");
    assert.deepEqual(rec.answers.map((a) => a.status), [200, 200]);
    assert.ok(rec.sent.every((s) => s.ifNoneMatch === null));
    const small = client({ etagCache: 2 });
    for (const id of ["t-003", "t-004", "t-005", "t-005"]) await small.properties.get(id);
    assert.equal(small.lastNotModified, true);
    assert.equal(small.etagCacheLength, 2);
    await small.properties.get("t-003"); // the oldest went first
    assert.equal(small.lastNotModified, false);
    assert.throws(() => client({ etagCache: -1 }), RangeError);
  });
});

describe("the ETag memory", () => {
  it("never keeps an answer that is not JSON", async () => {
    const sent: (string | null)[] = [];
    const c = client({
      maxRetries: 0,
      fetch: async (_url, init) => {
        sent.push(init.headers["If-None-Match"] ?? null);
        return new Response('{"data": {"id": 1', { status: 200, headers: { ETag: '"cut"' } });
      },
    });
    for (let i = 0; i < 2; i++) {
      await assert.rejects(c.properties.get("t-001"), /not JSON/);
    }
    assert.deepEqual(sent, [null, null]);
  });
});

describe("the change feed", () => {
  it("pages from the oldest change to caught up", async () => {
    const c = client();
    const page = await c.properties.changes({ limit: 5 });
    assert.equal(page.meta.limit, 5);
    assert.equal(page.data.length, 5);
    assert.ok(page.data.every((ch) => ch.changeType === "created" || ch.changeType === "updated"));
    assert.match(page.data[0]?.lastUpdated ?? "", /Z$/);
    const pages = [];
    for await (const p of c.properties.iterChanges({ pageSize: 10 })) pages.push(p);
    assert.ok(pages.length >= 5 && pages.slice(0, -1).every((p) => p.data.length === 10));
    const last = pages.at(-1)?.meta.nextCursor as string;
    const empty = await c.properties.changes({ since: last });
    assert.deepEqual(empty.data, []);
    assert.equal(empty.meta.nextCursor, last);
    for await (const _ of c.properties.iterChanges({ since: last })) assert.fail("caught up");
    await assert.rejects(c.properties.changes({ since: "not-a-cursor" }), (error) => {
      assert.ok(error instanceof InvalidParameterError && error.parameter === "since");
      return true;
    });
  });

  it("walks the changes of a load, after which the record's ETag changes", ownServer, async () => {
    const c = client();
    let cursor: string | null = null;
    const ids = new Set<string>();
    for await (const p of c.properties.iterChanges({ pageSize: 25 })) {
      for (const ch of p.data) ids.add(ch.id);
      cursor = p.meta.nextCursor;
    }
    assert.equal(ids.size, 42);
    const before = await c.properties.get("t-037");
    const tag = c.lastEtag;
    const lotSize = (before.lotSize ?? 0) + 1;
    loadRecord("t-037", { lot_size: lotSize }); // a change no other test reads
    const after = [];
    for await (const p of c.properties.iterChanges({ since: cursor, pageSize: 1 })) {
      after.push(...p.data.map((ch) => [ch.id, ch.changeType]));
    }
    assert.deepEqual(after, [["t-037", "updated"]]);
    const changed = await c.properties.get("t-037");
    assert.equal(c.lastNotModified, false);
    assert.notEqual(c.lastEtag, tag);
    assert.equal(changed.lotSize, lotSize);
  });
});

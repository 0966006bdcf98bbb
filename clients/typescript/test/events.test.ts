// Saved searches, webhooks, the event log and its stream: the requests the client makes and
// how it reads the answers, with a scripted fetch (a stream cut mid-event, a 503 then a 200
// cannot be asked of a live server); then the same surface against the live server.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  AuthenticationError,
  Client,
  InvalidParameterError,
  PlanLimitError,
  PropdataError,
  type FetchInit,
  type FetchLike,
} from "@propdata/client";

import { apiKey, baseUrl, errorAnswer, recorder } from "./harness.js";

const SEARCH = {
  id: "srch_a",
  name: "Ames under 400k",
  filters: { zipCode: "50010", maxPrice: 400000 },
  propertyIds: [],
  createdAt: "2026-11-25T12:00:00.000Z",
  matchCount: 7,
  dataVersion: 3,
};
const WEBHOOK = {
  id: "wh_a",
  url: "https://hooks.example.com/propdata",
  eventTypes: ["property.priceChanged"],
  searchIds: null,
  description: "prices",
  status: "enabled",
  disabledReason: null,
  createdAt: "2026-11-25T12:00:00.000Z",
};

function event(n: number, type = "property.priceChanged", searchId = "srch_a") {
  return {
    id: `evt_${String(n).padStart(26, "0")}`,
    type,
    timestamp: "2026-11-25T12:00:00.000Z",
    sequence: n,
    data: { searchId, searchName: "Ames", property: { id: "t-001" }, previous: {}, changes: ["listPrice"] },
  };
}

function sse(cursor: string, e: ReturnType<typeof event>): string {
  return `id: ${cursor}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
}

type Answer = Response | (() => Response);

/** A scripted fetch: answers by "METHOD path" in order (the last one repeats); records requests. */
function scripted(script: Record<string, Answer[]>) {
  const sent: { method: string; path: string; query: URLSearchParams; init: FetchInit }[] = [];
  const fetch: FetchLike = async (url, init) => {
    const u = new URL(url);
    sent.push({ method: init.method, path: u.pathname, query: u.searchParams, init });
    const queue = script[`${init.method} ${u.pathname}`];
    if (!queue?.length) return errorAnswer(404, "not_found");
    const next = (queue.length > 1 ? queue.shift() : queue[0]) as Answer;
    return typeof next === "function" ? next() : next.clone();
  };
  return { sent, fetch };
}

function json(body: unknown, status = 200): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

/** An SSE answer that sends `chunks` and then ends (as a cut connection does). */
function stream(...chunks: string[]): () => Response {
  return () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
          controller.close();
        },
      }),
      { status: 200, headers: { "Content-Type": "text/event-stream" } },
    );
}

function stub(script: Record<string, Answer[]>) {
  const s = scripted(script);
  const sleeper = recorder();
  const c = new Client({ apiKey: "pmd_live_stub", baseUrl: "http://sdk.test", fetch: s.fetch, sleep: sleeper.sleep });
  return { c, sent: s.sent, waits: sleeper.waits };
}

/** A stub client that never connects: every request throws, `tried.calls` counts them. */
function unreachable() {
  const tried = { calls: 0 };
  const sleeper = recorder();
  const lost = new Client({
    apiKey: "pmd_live_stub",
    baseUrl: "http://sdk.test",
    sleep: sleeper.sleep,
    fetch: async () => {
      tried.calls++;
      throw new TypeError("fetch failed");
    },
  });
  return { lost, tried, waits: sleeper.waits };
}

function sentBody(init: FetchInit): unknown {
  return JSON.parse(init.body as string);
}

describe("saved searches", () => {
  it("create sends the filters by wire name, bbox as its string", async () => {
    const { c, sent } = stub({ "POST /v1/searches": [json({ data: SEARCH }, 201)] });
    const made = await c.searches.create({
      name: "Ames under 400k",
      filters: { zipCode: "50010", maxPrice: 400000, bbox: [-93.7, 41.9, -93.5, 42.1] },
      propertyIds: ["t-001"],
    });
    assert.equal(made.matchCount, 7);
    assert.equal(made.dataVersion, 3);
    const [request] = sent;
    assert.equal(request?.init.headers["Content-Type"], "application/json");
    assert.deepEqual(sentBody(request!.init), {
      name: "Ames under 400k",
      filters: { zipCode: "50010", maxPrice: 400000, bbox: "-93.7,41.9,-93.5,42.1" },
      propertyIds: ["t-001"],
    });
    await assert.rejects(
      c.searches.create({ name: "x", filters: { limit: 5 } as never }),
      /unknown filter "limit"/,
    );
  });

  it("list, get, update, delete", async () => {
    const { c, sent } = stub({
      "GET /v1/searches": [json({ meta: { total: 1, limit: 25, offset: 0 }, data: [SEARCH] })],
      "GET /v1/searches/srch_a": [json({ data: SEARCH })],
      "PATCH /v1/searches/srch_a": [json({ data: { ...SEARCH, name: "renamed" } })],
      "DELETE /v1/searches/srch_a": [json(null, 204)],
    });
    assert.equal((await c.searches.list({ limit: 25 })).meta.total, 1);
    const all = [];
    for await (const s of c.searches.listAll()) all.push(s.id);
    assert.deepEqual(all, ["srch_a"]);
    assert.equal((await c.searches.get("srch_a")).name, "Ames under 400k");
    assert.equal((await c.searches.update("srch_a", { name: "renamed" })).name, "renamed");
    assert.equal(await c.searches.delete("srch_a"), undefined);
    assert.deepEqual(sentBody(sent.find((r) => r.method === "PATCH")!.init), { name: "renamed" });
  });

  it("a plan limit and a bad filter are their own errors", async () => {
    const { c } = stub({ "POST /v1/searches": [errorAnswer(403, "plan_limit_reached"), errorAnswer(400, "invalid_parameter")] });
    await assert.rejects(c.searches.create({ name: "x", filters: { zipCode: "50010" } }), PlanLimitError);
    await assert.rejects(c.searches.create({ name: "x", filters: { zipCode: "1" } }), InvalidParameterError);
  });

  it("a POST is retried after a 503, never after a lost connection", async () => {
    const { c, waits } = stub({
      "POST /v1/searches": [errorAnswer(503, "service_unavailable", { "Retry-After": "2" }), json({ data: SEARCH }, 201)],
    });
    assert.equal((await c.searches.create({ name: "x", filters: { zipCode: "50010" } })).id, "srch_a");
    assert.equal(waits.length, 1);
    const { lost, tried } = unreachable();
    await assert.rejects(lost.searches.create({ name: "x" }), (e: PropdataError) => e.code === "connection_error");
    assert.equal(tried.calls, 1);
    await assert.rejects(lost.searches.delete("srch_a"));
    assert.equal(tried.calls, 4); // a DELETE is idempotent: retried twice
  });
});

describe("webhooks", () => {
  it("every operation", async () => {
    const delivery = {
      eventId: "evt_1", type: "webhook.test", attempt: 1, status: "succeeded", responseStatus: 204,
      error: null, durationMs: 12, attemptedAt: "2026-11-25T12:00:05.000Z", nextAttemptAt: null,
    };
    const { c, sent } = stub({
      "POST /v1/webhooks": [json({ data: { ...WEBHOOK, secret: "whsec_abc" } }, 201)],
      "GET /v1/webhooks": [json({ meta: { total: 1, limit: 25, offset: 0 }, data: [WEBHOOK] })],
      "GET /v1/webhooks/wh_a": [json({ data: WEBHOOK })],
      "PATCH /v1/webhooks/wh_a": [json({ data: { ...WEBHOOK, status: "enabled" } })],
      "DELETE /v1/webhooks/wh_a": [json(null, 204)],
      "POST /v1/webhooks/wh_a/rotate-secret": [json({ data: { secret: "whsec_new" } })],
      "POST /v1/webhooks/wh_a/test": [new Response(null, { status: 202 })],
      "POST /v1/webhooks/wh_a/replay": [json({ data: { queued: 4 } }, 202)],
      "POST /v1/webhooks/wh_a/deliveries/evt_1/resend": [json({ data: { queued: 1 } }, 202)],
      "GET /v1/webhooks/wh_a/deliveries": [json({ meta: { total: 1, limit: 25, offset: 0 }, data: [delivery] })],
    });
    const made = await c.webhooks.create({ url: WEBHOOK.url, eventTypes: ["property.priceChanged"] });
    assert.equal(made.secret, "whsec_abc");
    assert.deepEqual(sentBody(sent[0]!.init), { url: WEBHOOK.url, eventTypes: ["property.priceChanged"] });
    assert.equal((await c.webhooks.list()).data[0]?.searchIds, null);
    for await (const w of c.webhooks.listAll({ pageSize: 5 })) assert.equal(w.id, "wh_a");
    assert.equal((await c.webhooks.get("wh_a")).status, "enabled");
    await c.webhooks.update("wh_a", { status: "enabled" });
    assert.equal(await c.webhooks.rotateSecret("wh_a", { graceSeconds: 60 }), "whsec_new");
    assert.equal(await c.webhooks.test("wh_a"), undefined);
    assert.equal(await c.webhooks.replay("wh_a", { since: "c_1" }), 4);
    assert.equal((await c.webhooks.deliveries("wh_a")).data[0]?.responseStatus, 204);
    for await (const d of c.webhooks.deliveriesAll("wh_a")) assert.equal(d.eventId, "evt_1");
    assert.equal(await c.webhooks.resend("wh_a", "evt_1"), undefined);
    assert.ok(sent.some((r) => `${r.method} ${r.path}` === "POST /v1/webhooks/wh_a/deliveries/evt_1/resend"));
    await c.webhooks.delete("wh_a");
    const bodies = Object.fromEntries(sent.filter((r) => r.init.body).map((r) => [`${r.method} ${r.path}`, sentBody(r.init)]));
    assert.deepEqual(bodies["PATCH /v1/webhooks/wh_a"], { status: "enabled" });
    assert.deepEqual(bodies["POST /v1/webhooks/wh_a/rotate-secret"], { graceSeconds: 60 });
    assert.deepEqual(bodies["POST /v1/webhooks/wh_a/replay"], { since: "c_1" });
    await assert.rejects(c.webhooks.replay("wh_a", { since: "" }), TypeError);
  });
});

describe("the event log", () => {
  it("list sends since, types, searchId and limit", async () => {
    const { c, sent } = stub({ "GET /v1/events": [json({ meta: { limit: 2, nextCursor: "c_2" }, data: [event(1), event(2)] })] });
    const page = await c.events.list({ since: "c_0", types: ["search.entered", "property.listed"], searchId: "srch_a", limit: 2 });
    assert.equal(page.meta.nextCursor, "c_2");
    assert.deepEqual(page.data.map((e) => e.sequence), [1, 2]);
    assert.equal(sent[0]?.query.toString(), "since=c_0&types=search.entered%2Cproperty.listed&searchId=srch_a&limit=2");
  });

  it("follow passes each nextCursor until caught up", async () => {
    const { c, sent } = stub({
      "GET /v1/events": [
        json({ meta: { limit: 2, nextCursor: "c_2" }, data: [event(1), event(2)] }),
        json({ meta: { limit: 2, nextCursor: "c_3" }, data: [event(3)] }),
        json({ meta: { limit: 2, nextCursor: "c_3" }, data: [] }),
      ],
    });
    const pages = [];
    for await (const page of c.events.follow({ pageSize: 2 })) pages.push(page.data.length);
    assert.deepEqual(pages, [2, 1]);
    assert.deepEqual(sent.map((r) => r.query.get("since")), [null, "c_2", "c_3"]);
  });
});

describe("the stream", () => {
  it("resumes with Last-Event-ID after a cut, after the server's retry", async () => {
    const cut = sse("c_2", event(2)).slice(0, 25);
    const { c, sent, waits } = stub({
      "GET /v1/events/stream": [
        stream(": hi\n\nretry: 300\n\n", sse("c_1", event(1)), cut),
        stream(sse("c_2", event(2)), ":\n\n", sse("c_3", event(3))),
      ],
    });
    const got: string[] = [];
    for await (const item of c.events.stream()) {
      got.push(item.cursor);
      assert.equal(JSON.parse(item.body).id, item.event.id);
      if (got.length === 3) break;
    }
    assert.deepEqual(got, ["c_1", "c_2", "c_3"]);
    assert.equal(sent[0]?.init.headers["Last-Event-ID"], undefined);
    assert.equal(sent[0]?.init.headers.Accept, "text/event-stream");
    assert.equal(sent[1]?.init.headers["Last-Event-ID"], "c_1");
    assert.ok(waits.length === 1 && waits[0]! >= 0.3 && waits[0]! < 0.8, String(waits));
  });

  it("starts after since; filters on the client", async () => {
    const { c, sent } = stub({
      "GET /v1/events/stream": [
        stream(sse("c_1", event(1, "search.entered")), sse("c_2", event(2)), sse("c_3", event(3, "property.priceChanged", "srch_b")), sse("c_4", event(4))),
      ],
    });
    const got: string[] = [];
    for await (const item of c.events.stream({ since: "c_0", types: ["property.priceChanged"], searchId: "srch_a", maxReconnects: 0 })) {
      got.push(item.cursor);
    }
    assert.deepEqual(got, ["c_2", "c_4"]);
    assert.equal(sent[0]?.init.headers["Last-Event-ID"], "c_0");
  });

  it("waits out a 503, throws a 401", async () => {
    const { c, waits } = stub({
      "GET /v1/events/stream": [
        errorAnswer(503, "service_unavailable", { "Retry-After": "3" }),
        stream(sse("c_1", event(1))),
        errorAnswer(401, "revoked_api_key"),
      ],
    });
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const item of c.events.stream()) got.push(item.cursor);
      })(),
      AuthenticationError,
    );
    assert.deepEqual(got, ["c_1"]);
    assert.ok(waits[0]! >= 3 && waits[0]! < 4);
  });

  it("gives up after maxReconnects when it cannot connect, and stops when aborted", async () => {
    const { lost, waits } = unreachable();
    await assert.rejects(
      (async () => {
        for await (const _ of lost.events.stream({ maxReconnects: 3 })) void _;
      })(),
      (e: PropdataError) => e.code === "connection_error",
    );
    assert.equal(waits.length, 3);
    const controller = new AbortController();
    controller.abort();
    const { c } = stub({ "GET /v1/events/stream": [stream(sse("c_1", event(1)))] });
    const none = [];
    for await (const item of c.events.stream({ signal: controller.signal })) none.push(item);
    assert.equal(none.length, 0);
  });
});

describe("events against the live server", () => {
  it("saved searches round-trip, and the log answers", async () => {
    const c = new Client({ apiKey, baseUrl });
    const made = await c.searches.create({ name: "ts sdk", filters: { zipCode: "50010" } });
    assert.match(made.id, /^srch_/);
    assert.ok(made.matchCount > 0);
    assert.equal((await c.searches.get(made.id)).name, "ts sdk");
    const page = await c.events.list({ searchId: made.id });
    assert.equal(typeof page.meta.nextCursor, "string");
    await c.searches.delete(made.id);
    await assert.rejects(c.searches.get(made.id), (e: PropdataError) => e.status === 404);
  });
});

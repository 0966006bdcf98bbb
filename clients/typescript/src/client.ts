/**
 * The propdata API client: one method per endpoint, paging iterators, the retry rule.
 */

import {
  APIConnectionError,
  AuthenticationError,
  PropdataError,
  RateLimitError,
  ServiceUnavailableError,
  errorFromResponse,
} from "./errors.js";
import type {
  AuthStatus,
  ChangesPage,
  CreatedWebhook,
  Delivery,
  Event,
  EventsPage,
  EventsParams,
  Export,
  ExportFile,
  FollowEventsParams,
  ListAllParams,
  ListParams,
  SavedSearch,
  SearchCreateParams,
  SearchFilters,
  SearchUpdateParams,
  StreamedEvent,
  StreamParams,
  Webhook,
  WebhookCreateParams,
  WebhookUpdateParams,
  ChangesParams,
  IterChangesParams,
  LookupParams,
  Market,
  MarketHistory,
  MarketHistoryParams,
  MarketSearchAllParams,
  MarketSearchParams,
  Page,
  Property,
  PropertyHistory,
  PropertyMatch,
  PropertyPage,
  PropertySearchAllParams,
  PropertySearchParams,
  PropertySummary,
  RateLimit,
  RecordParams,
  SearchMeta,
  Shaped,
  Valuation,
} from "./types.js";
import { VERSION } from "./version.js";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8000";
export const DEFAULT_TIMEOUT = 30;
export const DEFAULT_MAX_RETRIES = 2;
export const DEFAULT_MAX_RETRY_WAIT = 60;
export const DEFAULT_ETAG_CACHE = 128;
/** An answer longer than this (in characters) is not kept for conditional requests. */
const ETAG_CACHE_MAX_CHARS = 1 << 20;

/** The part of a fetch `Response` the client reads (`body`: the event stream only). */
export interface FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  readonly body?: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
}

/** The request the client makes; the global `fetch` takes it. */
export interface FetchInit {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** A `fetch` function: the global one by default. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>;

export interface ClientOptions {
  /** The API key; default `PROPDATA_API_KEY` from the environment (Node). */
  apiKey?: string;
  /** The service's address; default `PROPDATA_BASE_URL` (Node), then http://127.0.0.1:8000. */
  baseUrl?: string;
  /** Seconds to wait for an answer before giving up on an attempt; default 30. */
  timeout?: number;
  /** Retries after the first attempt of a request; default 2. 0 turns retrying off. */
  maxRetries?: number;
  /**
   * Longest wait, in seconds, the client sleeps before a retry; default 60. A 429 or 503
   * whose `Retry-After` announces more (a daily quota can announce hours) is thrown at once.
   */
  maxRetryWait?: number;
  /** Replaces the global `fetch` (for a proxy agent, logging, or tests). */
  fetch?: FetchLike;
  /** Replaces the sleep between retries; called with the wait in seconds. */
  sleep?: (seconds: number) => Promise<void> | void;
  /**
   * How many answers the client remembers with their ETag, to ask for them again with
   * `If-None-Match` and answer a 304 from memory; default 128, 0 turns it off.
   */
  etagCache?: number;
}

// The wire names of the query parameters each operation takes (checked at compile time
// against the params interfaces, and by test/openapi.test.ts against the service).
const LOOKUP_PARAMS = allKeys<LookupParams>()([
  "streetAddress", "city", "state", "zipCode", "address", "parcelId", "fields",
]);
const RECORD_PARAMS = allKeys<RecordParams>()(["fields"]);
const CHANGES_PARAMS = allKeys<ChangesParams>()(["since", "limit"]);
const PROPERTY_SEARCH_PARAMS = allKeys<PropertySearchParams>()([
  "zipCode", "city", "state", "status", "propertyType", "minPrice", "maxPrice", "minBeds",
  "maxBeds", "minBaths", "minSqft", "maxSqft", "minYearBuilt", "maxDaysOnMarket", "latitude",
  "longitude", "radius", "bbox", "limit", "offset", "cursor", "sort", "order", "fields",
]);
const MARKET_SEARCH_PARAMS = allKeys<MarketSearchParams>()([
  "city", "state", "zipCode", "limit", "offset",
]);
const MARKET_HISTORY_PARAMS = allKeys<MarketHistoryParams>()(["months"]);
const LIST_PARAMS = allKeys<ListParams>()(["limit", "offset"]);
const EVENTS_PARAMS = allKeys<EventsParams>()(["since", "types", "searchId", "limit"]);
const SEARCH_FILTERS = allKeys<SearchFilters>()([
  "zipCode", "city", "state", "status", "propertyType", "minPrice", "maxPrice", "minBeds",
  "maxBeds", "minBaths", "minSqft", "maxSqft", "minYearBuilt", "maxDaysOnMarket", "latitude",
  "longitude", "radius", "bbox",
]);
const SEARCH_FIELDS = allKeys<SearchCreateParams>()(["name", "filters", "propertyIds"]);
const WEBHOOK_FIELDS = allKeys<WebhookCreateParams>()(["url", "eventTypes", "searchIds", "description"]);
const WEBHOOK_UPDATE_FIELDS = allKeys<WebhookUpdateParams>()([
  "url", "eventTypes", "searchIds", "description", "status",
]);
/** Seconds without a byte before the stream is taken for dead and opened again (the API
 * sends a comment at least every 15 s). */
const STREAM_IDLE_SECONDS = 45;

/** A list of every key of T: a missing or an unknown key fails to compile. */
function allKeys<T>() {
  type Missing<K extends readonly unknown[]> = Exclude<keyof T, K[number]>;
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & ([Missing<K>] extends [never] ? unknown : { missing: Missing<K> }),
  ): readonly string[] => keys;
}

/**
 * A client of the propdata API.
 *
 * ```ts
 * import { Client } from "@propdata/client";
 *
 * const client = new Client(); // PROPDATA_API_KEY, PROPDATA_BASE_URL
 * const home = await client.properties.get("syn-0000059");
 * console.log(home.listPrice, client.lastRateLimit?.remaining);
 * ```
 *
 * Failed requests are retried up to `maxRetries` times: a 429 after its `Retry-After` plus
 * a uniform 0-1 s jitter; a 503 (or a 502/504 from a proxy) after its `Retry-After` plus
 * jitter, or without one after a capped exponential backoff with jitter (0.25-0.5 s,
 * 0.5-1 s, 1-2 s, ... at most 8 s), as are connection errors and timeouts. Any other error
 * (a 4xx other than 429) is thrown at once; so is a wait announced longer than
 * `maxRetryWait` seconds.
 */
export class Client {
  readonly baseUrl: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly maxRetryWait: number;
  /** The rate-limit and quota headers of the last answer (null before one, or when it had none). */
  lastRateLimit: RateLimit | null = null;
  /** The ETag of the last successful answer (null when it had none). */
  lastEtag: string | null = null;
  /** Whether the last successful answer was a 304, answered from the client's memory. */
  lastNotModified = false;
  /** Property records, lookups, searches, history and valuations. */
  readonly properties: Properties;
  /** ZIP-code market snapshots, monthly history and market search. */
  readonly markets: Markets;
  /** The calling key. */
  readonly auth: Auth;
  /** Saved searches: what events are about. */
  readonly searches: Searches;
  /** The event log and its stream. */
  readonly events: Events;
  /** Webhook endpoints, their deliveries, replays and secrets. */
  readonly webhooks: Webhooks;
  /** Snapshots of the whole data set (Pro and Enterprise keys). */
  readonly exports: Exports;

  readonly #headers: Record<string, string>;
  readonly #fetch: FetchLike;
  readonly #sleep: (seconds: number) => Promise<void> | void;
  readonly #etagCacheSize: number;
  readonly #etags = new Map<string, { etag: string; text: string }>();

  constructor(options: ClientOptions = {}) {
    const env = environment();
    const key = (options.apiKey ?? env.PROPDATA_API_KEY ?? "").trim();
    if (!key) {
      throw new AuthenticationError("No API key: pass apiKey or set PROPDATA_API_KEY.", {
        code: "missing_api_key",
      });
    }
    if (/[\s\x00-\x1f\x7f]/.test(key)) {
      throw new AuthenticationError("The API key contains spaces or control characters.", {
        code: "invalid_api_key",
      });
    }
    const base = options.baseUrl || env.PROPDATA_BASE_URL || DEFAULT_BASE_URL;
    if (!/^https?:\/\//i.test(base)) {
      throw new TypeError(`baseUrl must start with http:// or https://, not ${JSON.stringify(base)}`);
    }
    this.baseUrl = base.replace(/\/+$/, "");
    this.timeout = nonNegative("timeout", options.timeout ?? DEFAULT_TIMEOUT);
    this.maxRetries = Math.floor(
      nonNegative("maxRetries", options.maxRetries ?? DEFAULT_MAX_RETRIES),
    );
    this.maxRetryWait = nonNegative("maxRetryWait", options.maxRetryWait ?? DEFAULT_MAX_RETRY_WAIT);
    if (options.fetch === undefined && typeof globalThis.fetch !== "function") {
      throw new TypeError("No global fetch (Node 18 or later has one): pass options.fetch.");
    }
    this.#fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.#sleep = options.sleep ?? sleep;
    this.#etagCacheSize = Math.floor(
      nonNegative("etagCache", options.etagCache ?? DEFAULT_ETAG_CACHE),
    );
    this.#headers = { Authorization: `Bearer ${key}`, Accept: "application/json" };
    if (env.isNode) this.#headers["User-Agent"] = `propdata-client-typescript/${VERSION}`;
    this.properties = new Properties(this);
    this.markets = new Markets(this);
    this.auth = new Auth(this);
    this.searches = new Searches(this);
    this.events = new Events(this);
    this.webhooks = new Webhooks(this);
    this.exports = new Exports(this);
  }

  toString(): string {
    return `Client(baseUrl=${this.baseUrl})`;
  }

  /**
   * GET any API path (`/v1/...`) with `query`, retried by the rule above; the parsed JSON
   * answer, whole. The methods below are built on it.
   */
  async request(path: string, query: [string, string][] = []): Promise<unknown> {
    return this.send("GET", path, query);
  }

  /**
   * @internal Any request: a JSON `body` for a write; the parsed answer (null for one
   * without a body, a 202 or 204). A POST is retried only after a 429 or a 503 (the API
   * did nothing), never after a lost connection, which may have done it.
   */
  async send(
    method: FetchInit["method"],
    path: string,
    query: [string, string][] = [],
    body?: unknown,
  ): Promise<unknown> {
    const url = this.baseUrl + path + (query.length ? `?${new URLSearchParams(query)}` : "");
    const key = path + "?" + new URLSearchParams([...query].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const reading = method === "GET";
    for (let retries = 0; ; retries++) {
      let error: PropdataError;
      try {
        const known = reading ? this.#etags.get(key) : undefined;
        const headers = { ...this.#headers };
        if (known) headers["If-None-Match"] = known.etag;
        const init: FetchInit = { method, headers, signal: timeoutSignal(this.timeout) };
        if (body !== undefined) {
          headers["Content-Type"] = "application/json";
          init.body = JSON.stringify(body);
        }
        const response = await this.#fetch(url, init);
        const text = await response.text();
        const rateLimit = rateLimitOf(response.headers);
        this.lastRateLimit = rateLimit;
        const requestId = response.headers.get("X-Request-Id");
        if (response.status === 304 && known) {
          this.lastNotModified = true;
          this.lastEtag = response.headers.get("ETag") ?? known.etag;
          this.#remember(key, known.etag, known.text);
          return parseAnswer(known.text, 200, requestId);
        }
        if (response.status < 300 && !reading) {
          this.lastNotModified = false;
          this.lastEtag = null;
          return text.trim() ? parseAnswer(text, response.status, requestId) : null;
        }
        if (response.status < 300) {
          this.lastNotModified = false;
          this.lastEtag = response.headers.get("ETag");
          this.#etags.delete(key);
          const answer = parseAnswer(text, response.status, requestId); // only JSON is kept
          this.#remember(key, this.lastEtag, text);
          return answer;
        }
        error = errorFromResponse(response.status, text, requestId, rateLimit);
      } catch (cause) {
        if (cause instanceof PropdataError) throw cause;
        error = connectionError(cause);
      }
      const wait =
        method === "POST" && !(error instanceof RateLimitError || error.status === 503)
          ? null
          : retryWait(retries, error, this.maxRetries, this.maxRetryWait);
      if (wait === null) throw error;
      await this.#sleep(wait);
    }
  }

  /**
   * @internal A file's answer, its body unread (export downloads): an error answer is
   * thrown. Not retried, not remembered: a download is started again by its caller.
   */
  async fetchFile(path: string): Promise<FetchResponse> {
    const headers = { ...this.#headers, Accept: "*/*" };
    let response: FetchResponse;
    try {
      response = await this.#fetch(this.baseUrl + path, { method: "GET", headers });
    } catch (cause) {
      throw connectionError(cause);
    }
    this.lastRateLimit = rateLimitOf(response.headers);
    if (response.status >= 300) {
      const text = await response.text();
      throw errorFromResponse(response.status, text, response.headers.get("X-Request-Id"), this.lastRateLimit);
    }
    return response;
  }

  /** @internal A write's `data` (`{data}` answers). */
  async write<T>(method: FetchInit["method"], path: string, body?: unknown): Promise<T> {
    const answer = await this.send(method, path, [], body);
    if (answer === null || typeof answer !== "object" || !("data" in answer)) {
      throw invalidAnswer("no data", this.lastRateLimit);
    }
    return (answer as { data: T }).data;
  }

  /**
   * @internal The event stream: `GET /v1/events/stream`, opened again after each end or
   * failure with `Last-Event-ID`, by the rule of `events.stream`.
   */
  async *stream(params: StreamParams = {}): AsyncGenerator<StreamedEvent, void, undefined> {
    const { since, types, searchId, maxReconnects, signal, ...rest } = params;
    if (Object.keys(rest).length) {
      throw new TypeError(`unknown parameter ${JSON.stringify(Object.keys(rest)[0])}`);
    }
    const wanted = types === undefined ? null : new Set(typeof types === "string" ? types.split(",") : types);
    let cursor = since ?? null;
    let failures = 0;
    let reconnects = 0;
    let retryMs: number | null = null;
    for (;;) {
      if (signal?.aborted) return;
      let error: PropdataError | null = null;
      const idle = new AbortController();
      const stop = () => idle.abort();
      signal?.addEventListener("abort", stop);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(stop, STREAM_IDLE_SECONDS * 1000);
        (timer as { unref?: () => void }).unref?.();
      };
      try {
        const headers: Record<string, string> = {
          ...this.#headers,
          Accept: "text/event-stream",
          "Cache-Control": "no-cache",
        };
        if (cursor !== null) headers["Last-Event-ID"] = cursor;
        arm();
        const response = await this.#fetch(this.baseUrl + "/v1/events/stream", {
          method: "GET",
          headers,
          signal: idle.signal,
        });
        this.lastRateLimit = rateLimitOf(response.headers);
        if (response.status >= 300) {
          const text = await response.text();
          error = errorFromResponse(response.status, text, response.headers.get("X-Request-Id"), this.lastRateLimit);
        } else if (!response.body) {
          throw new PropdataError("The event stream has no body to read.", { code: "invalid_response" });
        } else {
          failures = 0;
          const parser = new SseParser();
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          let buffered = "";
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              arm();
              buffered += decoder.decode(value, { stream: true });
              const lines = buffered.split(/\r\n|\r|\n/);
              buffered = lines.pop() ?? "";
              for (const line of lines) {
                const message = parser.feed(line);
                retryMs = parser.retryMs ?? retryMs;
                if (message === null) continue;
                const item = streamed(message);
                cursor = item.cursor;
                if (wanted !== null && !wanted.has(item.event.type)) continue;
                if (searchId !== undefined && item.event.data.searchId !== searchId) continue;
                yield item;
                if (signal?.aborted) return;
              }
            }
          } finally {
            reader.cancel().catch(() => {});
          }
        }
      } catch (cause) {
        if (cause instanceof PropdataError) throw cause;
        if (signal?.aborted) return;
        error = connectionError(cause);
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", stop);
      }
      if (signal?.aborted) return;
      let wait: number | null;
      if (error === null) wait = (retryMs !== null ? retryMs / 1000 : 1) + Math.random() / 2;
      else wait = retryWait(Math.min(failures, 30), error, Math.min(failures, 30) + 1, this.maxRetryWait);
      if (wait === null || (maxReconnects !== undefined && reconnects >= maxReconnects)) {
        if (error === null) return;
        throw error;
      }
      if (error !== null) failures++;
      reconnects++;
      await this.#sleep(wait);
    }
  }

  /** The ETag memory: the newest answer last; the oldest goes first when it is full. */
  #remember(key: string, etag: string | null, text: string): void {
    this.#etags.delete(key);
    if (this.#etagCacheSize === 0 || etag === null || text.length > ETAG_CACHE_MAX_CHARS) return;
    this.#etags.set(key, { etag, text });
    while (this.#etags.size > this.#etagCacheSize) {
      const oldest = this.#etags.keys().next().value as string;
      this.#etags.delete(oldest);
    }
  }

  /** How many answers the ETag memory holds. */
  get etagCacheLength(): number {
    return this.#etags.size;
  }

  /** @internal One answer's `data`. */
  async data<T>(path: string, query?: [string, string][]): Promise<T> {
    const answer = await this.request(path, query);
    if (answer === null || typeof answer !== "object" || !("data" in answer)) {
      throw invalidAnswer("no data", this.lastRateLimit);
    }
    return (answer as { data: T }).data;
  }

  /** @internal One search page, `{meta, data}`. */
  async page<T, M = Page<T>["meta"]>(
    path: string,
    query?: [string, string][],
  ): Promise<{ meta: M; data: T[] }> {
    const answer = (await this.request(path, query)) as { meta?: M; data?: T[] } | null;
    if (answer === null || typeof answer !== "object" || !Array.isArray(answer.data)) {
      throw invalidAnswer("not a page", this.lastRateLimit);
    }
    if (answer.meta === null || typeof answer.meta !== "object") {
      throw invalidAnswer("not a page", this.lastRateLimit);
    }
    return { meta: answer.meta, data: answer.data };
  }

  /**
   * @internal Every item of every page of a search, one request per page: from `offset` 0,
   * then by `meta.nextCursor` when the answer has one (a property search: null on the last
   * page), else by offset until `meta.total`.
   */
  async *pages<T>(path: string, query: [string, string][]): AsyncGenerator<T, void, undefined> {
    let next: [string, string] | null = ["offset", "0"];
    const seen = new Set<string>();
    while (next !== null) {
      const page: { meta: Page<T>["meta"] & { nextCursor?: string | null }; data: T[] } =
        await this.page<T>(path, [...query, next]);
      yield* page.data;
      const cursor = page.meta.nextCursor;
      if (cursor !== undefined) {
        // a cursor page may be short, even empty, when records were removed since the walk began
        next = cursor === null || seen.has(cursor) ? null : ["cursor", cursor];
        if (cursor !== null) seen.add(cursor);
      } else {
        const offset = page.meta.offset + Math.max(page.meta.limit, page.data.length);
        next = page.data.length > 0 && offset < page.meta.total ? ["offset", String(offset)] : null;
      }
    }
  }
}

/**
 * `client.properties`. The reads take `fields` (wire names, dotted for nested ones, as a list
 * or one comma-separated string): the answer then holds only those fields and `id`, typed
 * `Selected<T>` (every field optional, at every depth) instead of `T`.
 */
export class Properties {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** The full record: `GET /v1/properties/{id}`. */
  async get<P extends RecordParams = {}>(id: string, params?: P): Promise<Shaped<Property, P>> {
    return this.#record(id, "", params);
  }

  /**
   * The one property at a street address, matched after USPS normalisation:
   * `GET /v1/properties/lookup`. Throws NotFoundError when nothing matches exactly and
   * AmbiguousAddressError (with `zipCodes`) when several properties do; both carry
   * `candidates`, the properties at that street address (other units, say).
   */
  async lookup<P extends LookupParams>(params: P): Promise<Shaped<PropertyMatch, P>> {
    return this.#client.data("/v1/properties/lookup", query(LOOKUP_PARAMS, params));
  }

  /**
   * One page of a property search: `GET /v1/properties`. `limit` defaults to the plan's
   * page size and is clamped to its maximum (`meta.limit` is the size applied);
   * `meta.nextCursor`, passed back as `cursor`, asks for the next page at any depth.
   */
  async search<P extends PropertySearchParams = {}>(
    params?: P,
  ): Promise<PropertyPage<Shaped<PropertySummary, P>>> {
    return this.#client.page<Shaped<PropertySummary, P>, SearchMeta>(
      "/v1/properties",
      query(PROPERTY_SEARCH_PARAMS, params ?? {}),
    );
  }

  /**
   * Every match of a property search, page after page (each page one metered request):
   *
   * ```ts
   * for await (const home of client.properties.searchAll({ zipCode: "50010", pageSize: 100 })) {
   *   console.log(home.id, home.listPrice);
   * }
   * ```
   */
  async *searchAll<P extends PropertySearchAllParams = {}>(
    params?: P,
  ): AsyncGenerator<Shaped<PropertySummary, P>, void, undefined> {
    const q = allPagesQuery(PROPERTY_SEARCH_PARAMS, params ?? {});
    yield* this.#client.pages<Shaped<PropertySummary, P>>("/v1/properties", q);
  }

  /** Price history (newest first) and tax history: `GET /v1/properties/{id}/history`. */
  async history<P extends RecordParams = {}>(id: string, params?: P): Promise<Shaped<PropertyHistory, P>> {
    return this.#record(id, "/history", params);
  }

  /** Value and rent estimates, gross yield, comparables: `GET /v1/properties/{id}/valuation`. */
  async valuation<P extends RecordParams = {}>(id: string, params?: P): Promise<Shaped<Valuation, P>> {
    return this.#record(id, "/valuation", params);
  }

  /** `GET /v1/properties/{id}` followed by `tail`, with the `fields` of `params`. */
  #record<T>(id: string, tail: string, params: RecordParams | undefined): Promise<T> {
    const path = `/v1/properties/${segment(id, "id")}${tail}`;
    return this.#client.data(path, query(RECORD_PARAMS, params ?? {}));
  }

  /**
   * One page of the change feed: `GET /v1/properties/changes`. `since` is an earlier page's
   * `meta.nextCursor` (absent: from the oldest change kept); `meta.nextCursor` is never null,
   * and an empty `data` means caught up: ask again later with the same cursor.
   */
  async changes(params: ChangesParams = {}): Promise<ChangesPage> {
    const q = query(CHANGES_PARAMS, params);
    return this.#client.page<ChangesPage["data"][number], ChangesPage["meta"]>(
      "/v1/properties/changes",
      q,
    );
  }

  /**
   * Every page of the change feed after `since`, until caught up (the first empty page ends
   * it and is not yielded). Pages, not single changes: save each page's `meta.nextCursor`
   * once you have applied it, and pass the last one as `since` next time.
   *
   * ```ts
   * for await (const page of client.properties.iterChanges({ since: cursor })) {
   *   for (const change of page.data) await apply(change);
   *   cursor = page.meta.nextCursor;
   * }
   * ```
   */
  async *iterChanges(params: IterChangesParams = {}): AsyncGenerator<ChangesPage, void, undefined> {
    const { since, pageSize, ...rest } = params;
    if (Object.keys(rest).length) {
      throw new TypeError(`unknown parameter ${JSON.stringify(Object.keys(rest)[0])}`);
    }
    let cursor = since ?? undefined;
    for (;;) {
      const page = await this.changes({ since: cursor, limit: pageSize });
      if (page.data.length === 0) return;
      yield page;
      cursor = page.meta.nextCursor;
    }
  }
}

/** `client.markets`. */
export class Markets {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** The current market snapshot of a ZIP code: `GET /v1/markets/{zipCode}`. */
  async get(zipCode: string): Promise<Market> {
    return this.#client.data(`/v1/markets/${segment(zipCode, "zipCode")}`);
  }

  /**
   * Monthly history, newest first (`months` 1-60, default 12):
   * `GET /v1/markets/{zipCode}/history`.
   */
  async history(zipCode: string, params: MarketHistoryParams = {}): Promise<MarketHistory> {
    const path = `/v1/markets/${segment(zipCode, "zipCode")}/history`;
    return this.#client.data(path, query(MARKET_HISTORY_PARAMS, params));
  }

  /** One page of markets by city, state or ZIP prefix (1-5 digits): `GET /v1/markets/search`. */
  async search(params: MarketSearchParams = {}): Promise<Page<Market>> {
    return this.#client.page("/v1/markets/search", query(MARKET_SEARCH_PARAMS, params));
  }

  /** Every market of a market search, page after page. */
  async *searchAll(params: MarketSearchAllParams = {}): AsyncGenerator<Market, void, undefined> {
    const q = allPagesQuery(MARKET_SEARCH_PARAMS, params);
    yield* this.#client.pages<Market>("/v1/markets/search", q);
  }
}

/** `client.auth`. */
/** Node's modules, loaded only by what needs the file system (browsers never reach it). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const nodeModule = (name: string): Promise<any> => import(name);

/**
 * `client.exports`: snapshots of the whole data set (Pro and Enterprise keys).
 *
 * ```ts
 * const snapshot = await client.exports.download("snapshot"); // the newest, checksums checked
 * for await (const page of client.properties.iterChanges({ since: snapshot.feedCursor })) { ... }
 * ```
 */
export class Exports {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** Every snapshot, newest first: `GET /v1/exports` (never metered). */
  async list(): Promise<Export[]> {
    return this.#client.data("/v1/exports");
  }

  /**
   * Download a snapshot (the newest without `exportId`) into `folder` (Node only): each file
   * written to `<name>.part`, checked against the manifest's SHA-256 and size (a
   * `checksum_mismatch` PropdataError otherwise), renamed into place; `manifest.json` last.
   * Each file counts as one request.
   */
  async download(folder: string, exportId?: string): Promise<Export> {
    const all = await this.list();
    const chosen = exportId === undefined ? all[0] : all.find((e) => e.id === exportId);
    if (chosen === undefined) {
      throw new PropdataError(exportId === undefined ? "No export to download." : `No export with id ${JSON.stringify(exportId)}.`, {
        code: "not_found",
        status: 404,
      });
    }
    const path = await nodeModule("node:path");
    const fsp = await nodeModule("node:fs/promises");
    const root: string = path.resolve(folder);
    for (const file of chosen.files) await this.#fetch(root, chosen.id, file);
    await fsp.writeFile(path.join(root, "manifest.json"), JSON.stringify(chosen, null, 2));
    return chosen;
  }

  async #fetch(root: string, exportId: string, file: ExportFile): Promise<void> {
    const path = await nodeModule("node:path");
    const fs = await nodeModule("node:fs");
    const fsp = await nodeModule("node:fs/promises");
    const crypto = await nodeModule("node:crypto");
    const { once } = await nodeModule("node:events");
    const target: string = path.resolve(root, file.name);
    if (!target.startsWith(root + path.sep)) {
      throw new PropdataError(`The export names a file outside its folder: ${JSON.stringify(file.name)}`, {
        code: "invalid_response",
      });
    }
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const encoded = file.name.split("/").map(encodeURIComponent).join("/");
    const response = await this.#client.fetchFile(`/v1/exports/${encodeURIComponent(exportId)}/files/${encoded}`);
    const part = `${target}.part`;
    const out = fs.createWriteStream(part);
    const digest = crypto.createHash("sha256");
    let size = 0;
    try {
      const reader = response.body?.getReader();
      if (!reader) throw new PropdataError("The answer had no body.", { code: "invalid_response" });
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        digest.update(value);
        size += value.length;
        if (!out.write(value)) await once(out, "drain");
      }
      await new Promise<void>((resolve, reject) => out.end((error?: Error) => (error ? reject(error) : resolve())));
    } catch (error) {
      out.destroy();
      await fsp.rm(part, { force: true });
      throw error;
    }
    const found: string = digest.digest("hex");
    if (found !== file.sha256 || size !== file.bytes) {
      await fsp.rm(part, { force: true });
      throw new PropdataError(`${file.name}: the downloaded bytes have SHA-256 ${found}, the manifest says ${file.sha256}; download it again.`, {
        code: "checksum_mismatch",
      });
    }
    await fsp.rename(part, target);
  }
}

export class Auth {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** The key, its plan, limits and usage: `GET /v1/auth/status` (never metered, never limited). */
  async status(): Promise<AuthStatus> {
    return this.#client.data("/v1/auth/status");
  }
}

/**
 * What `client.searches` and `client.webhooks` share: the account's items at `path`, a page
 * at a time or all of them, and one item by its id to read or delete.
 */
export abstract class Collection<T> {
  readonly #client: Client;
  /** `/v1/searches` or `/v1/webhooks`. */
  protected abstract readonly path: string;

  constructor(client: Client) {
    this.#client = client;
  }

  protected get client(): Client {
    return this.#client;
  }

  /** `path`/{id}, then `tail`. */
  protected itemPath(id: string, tail = ""): string {
    return `${this.path}/${segment(id, "id")}${tail}`;
  }

  /** One page: `GET /v1/searches` or `GET /v1/webhooks`. */
  async list(params: ListParams = {}): Promise<Page<T>> {
    return this.client.page(this.path, query(LIST_PARAMS, params));
  }

  /** Every item, page after page. */
  async *listAll(params: ListAllParams = {}): AsyncGenerator<T, void, undefined> {
    yield* this.client.pages<T>(this.path, allPagesQuery(LIST_PARAMS, params));
  }

  /** One item: `GET /v1/searches/{id}` or `GET /v1/webhooks/{id}`. */
  async get(id: string): Promise<T> {
    return this.client.data(this.itemPath(id));
  }

  /** Delete an item: `DELETE /v1/searches/{id}` or `DELETE /v1/webhooks/{id}`. */
  async delete(id: string): Promise<void> {
    await this.client.send("DELETE", this.itemPath(id));
  }
}

/**
 * `client.searches`: saved searches. `filters` takes `GET /v1/properties`' filters by their
 * wire names (`{ zipCode: "50010", maxPrice: 400000 }`); `propertyIds` (at most 1,000)
 * watches those records; a record must pass both.
 */
export class Searches extends Collection<SavedSearch> {
  protected readonly path = "/v1/searches";

  /** Save a search: `POST /v1/searches`. `matchCount` is how many records match (at `dataVersion`).
   * Throws PlanLimitError past the plan's limit. */
  async create(params: SearchCreateParams): Promise<SavedSearch> {
    return this.client.write("POST", this.path, searchBody(params));
  }

  /** Change a saved search's name, filters or ids: `PATCH /v1/searches/{id}`. */
  async update(id: string, params: SearchUpdateParams): Promise<SavedSearch> {
    return this.client.write("PATCH", this.itemPath(id), searchBody(params));
  }
}

/**
 * `client.events`: the event log of the key's account (kept 30 days), and its stream.
 */
export class Events {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /**
   * One page of events, oldest first: `GET /v1/events` (one metered lookup). `since` is an
   * earlier page's `meta.nextCursor`; `meta.nextCursor` is never null, and an empty `data`
   * means caught up.
   */
  async list(params: EventsParams = {}): Promise<EventsPage> {
    return this.#client.page<Event, EventsPage["meta"]>("/v1/events", query(EVENTS_PARAMS, params));
  }

  /**
   * Every page of events after `since`, until caught up (the first empty page ends it and
   * is not yielded). Save each page's `meta.nextCursor` once handled; pass the last as
   * `since` next time. One metered request per page.
   */
  async *follow(params: FollowEventsParams = {}): AsyncGenerator<EventsPage, void, undefined> {
    const { since, pageSize, ...filters } = params;
    let cursor = since ?? undefined;
    for (;;) {
      const page = await this.list({ ...filters, since: cursor, limit: pageSize });
      if (page.data.length === 0) return;
      yield page;
      cursor = page.meta.nextCursor;
    }
  }

  /**
   * Events as they happen: `GET /v1/events/stream` (Server-Sent Events), for ever.
   *
   * ```ts
   * for await (const { cursor, event } of client.events.stream({ since: saved })) {
   *   await handle(event);
   *   saved = cursor;
   * }
   * ```
   *
   * Each item is the event, its `cursor` and its JSON as sent. When the connection ends or
   * fails it is opened again with `Last-Event-ID`, the last cursor seen: after the server's
   * `retry:` (else about 1 s), or after a 429's or 503's `Retry-After` or a capped backoff
   * for a lost connection; any other error is thrown. `types` and `searchId` are applied by
   * the client. Abort `signal` to stop. Each opening is one metered lookup.
   */
  stream(params: StreamParams = {}): AsyncGenerator<StreamedEvent, void, undefined> {
    return this.#client.stream(params);
  }
}

/**
 * `client.webhooks`: endpoints the API POSTs events to, signed as Standard Webhooks sign.
 * Verify each delivery with `verifyWebhook` from `@propdata/client/webhooks`.
 */
export class Webhooks extends Collection<Webhook> {
  protected readonly path = "/v1/webhooks";

  /** Add an endpoint: `POST /v1/webhooks`. Its `secret` is shown this once. */
  async create(params: WebhookCreateParams): Promise<CreatedWebhook> {
    return this.client.write("POST", this.path, body(params, WEBHOOK_FIELDS));
  }

  /** Change an endpoint: `PATCH /v1/webhooks/{id}`. `status: "enabled"` turns it back on
   * (the events kept while it was off are then delivered, oldest first). */
  async update(id: string, params: WebhookUpdateParams): Promise<Webhook> {
    return this.client.write("PATCH", this.itemPath(id), body(params, WEBHOOK_UPDATE_FIELDS));
  }

  /** A new signing secret: `POST /v1/webhooks/{id}/rotate-secret`. Until `graceSeconds`
   * pass (0-604,800; default a day) deliveries carry signatures by both secrets. */
  async rotateSecret(id: string, params: { graceSeconds?: number } = {}): Promise<string> {
    const path = this.itemPath(id, "/rotate-secret");
    const made = await this.client.write<{ secret: string }>("POST", path, body(params, ["graceSeconds"]));
    return made.secret;
  }

  /** Send a `webhook.test` event to this endpoint alone: `POST /v1/webhooks/{id}/test`. */
  async test(id: string): Promise<void> {
    await this.client.send("POST", this.itemPath(id, "/test"), [], {});
  }

  /** One page of the endpoint's delivery attempts, newest first (a row per attempt made, one
   * per delivery waiting): `GET /v1/webhooks/{id}/deliveries`. */
  async deliveries(id: string, params: ListParams = {}): Promise<Page<Delivery>> {
    const path = this.itemPath(id, "/deliveries");
    return this.client.page(path, query(LIST_PARAMS, params));
  }

  /** Every delivery attempt of the endpoint, newest first, page after page. */
  async *deliveriesAll(id: string, params: ListAllParams = {}): AsyncGenerator<Delivery, void, undefined> {
    const path = this.itemPath(id, "/deliveries");
    yield* this.client.pages<Delivery>(path, allPagesQuery(LIST_PARAMS, params));
  }

  /** Send an event the endpoint was sent once more, with the same `webhook-id` (`webhook.test`
   * events too): `POST /v1/webhooks/{id}/deliveries/{eventId}/resend`. */
  async resend(id: string, eventId: string): Promise<void> {
    const path = this.itemPath(id, `/deliveries/${segment(eventId, "eventId")}/resend`);
    await this.client.send("POST", path, [], {});
  }

  /** Deliver again the kept events after the cursor `since` that reached the endpoint and
   * pass its filters (same ids): `POST /v1/webhooks/{id}/replay`. How many were queued (one
   * replay of an endpoint at a time, 10 an account a day). */
  async replay(id: string, params: { since: string }): Promise<number> {
    if (typeof params?.since !== "string" || params.since === "") {
      throw new TypeError("since must be a cursor (a non-empty string)");
    }
    const path = this.itemPath(id, "/replay");
    const queued = await this.client.write<{ queued: number }>("POST", path, body(params, ["since"]));
    return queued.queued;
  }
}

// -- the retry rule ------------------------------------------------------------------------

const RETRY_STATUSES = new Set([502, 503, 504]);
const BACKOFF_BASE = 0.5;
const BACKOFF_CAP = 8;

/**
 * Seconds to sleep before the next attempt, or null to throw `error`. The same rule as the
 * Python SDK's RetryPolicy.wait.
 */
export function retryWait(
  retriesDone: number,
  error: PropdataError,
  maxRetries: number,
  maxRetryWait: number,
  random: () => number = Math.random,
): number | null {
  if (retriesDone >= maxRetries) return null;
  const retryable =
    error instanceof RateLimitError ||
    error instanceof ServiceUnavailableError ||
    error instanceof APIConnectionError ||
    (error.status !== null && RETRY_STATUSES.has(error.status));
  if (!retryable) return null;
  if (error.retryAfter !== null) {
    const announced = Math.max(error.retryAfter, 0);
    if (announced > maxRetryWait) return null;
    return announced + random();
  }
  if (error instanceof RateLimitError) return 1 + random(); // a 429 without Retry-After
  const step = Math.min(BACKOFF_CAP, BACKOFF_BASE * 2 ** retriesDone);
  return Math.min(step / 2 + (random() * step) / 2, maxRetryWait);
}

// -- helpers -------------------------------------------------------------------------------

function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

function nonNegative(name: string, value: number): number {
  if (typeof value !== "number" || !(value >= 0) || value === Infinity) {
    throw new RangeError(`${name} must be a number of 0 or more, not ${String(value)}`);
  }
  return value;
}

interface Environment {
  PROPDATA_API_KEY?: string | undefined;
  PROPDATA_BASE_URL?: string | undefined;
  isNode: boolean;
}

/** The two PROPDATA_* variables when running in Node (none in a browser). */
interface NodeProcess {
  env?: Record<string, string | undefined>;
  versions?: { node?: string };
}

function environment(): Environment {
  const proc = (globalThis as { process?: NodeProcess }).process;
  const env = proc?.env ?? {};
  return {
    PROPDATA_API_KEY: env.PROPDATA_API_KEY,
    PROPDATA_BASE_URL: env.PROPDATA_BASE_URL,
    isNode: typeof proc?.versions?.node === "string",
  };
}

/** A path parameter, percent-encoded (`.` and `..` too, so no URL normaliser moves up a level). */
function segment(value: string, name: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${name} must be a non-empty string`);
  }
  const encoded = encodeURIComponent(value);
  return /^\.+$/.test(value) ? encoded.replace(/\./g, "%2E") : encoded;
}

/** The query string pairs of an operation; undefined and null values are left out. */
function query(allowed: readonly string[], values: object): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(values ?? {}) as [string, unknown][]) {
    if (value === undefined || value === null) continue;
    if (!allowed.includes(name)) throw new TypeError(`unknown parameter ${JSON.stringify(name)}`);
    if (typeof value === "number") {
      if (!Number.isFinite(value)) throw new TypeError(`${name} must be a finite number`);
      pairs.push([name, String(value)]);
    } else if (typeof value === "string") {
      pairs.push([name, value]);
    } else if (name === "bbox" && Array.isArray(value)) {
      if (value.length !== 4 || !value.every((v) => typeof v === "number" && Number.isFinite(v))) {
        throw new TypeError("bbox is [west, south, east, north]: four finite numbers");
      }
      pairs.push([name, value.map((v: number) => decimal(v)).join(",")]);
    } else if ((name === "fields" || name === "types") && Array.isArray(value)) {
      if (!value.every((v) => typeof v === "string")) {
        throw new TypeError(`${name} must be wire names (strings)`);
      }
      pairs.push([name, value.join(",")]);
    } else {
      throw new TypeError(`${name} must be a string or a number, not ${typeof value}`);
    }
  }
  return pairs;
}

/** A number in plain decimal digits (never an exponent, which the API does not read). */
function decimal(value: number): string {
  const text = value.toFixed(10).replace(/\.?0+$/, "");
  return text === "-0" || text === "" ? "0" : text;
}

/** The query of a searchAll: its filters, and `pageSize` as the `limit` of every page. */
function allPagesQuery(
  allowed: readonly string[],
  params: { pageSize?: number },
): [string, string][] {
  const { pageSize, ...filters } = params as { pageSize?: number } & Record<string, unknown>;
  for (const name of ["limit", "offset", "cursor"]) {
    if (filters[name] !== undefined) {
      throw new TypeError(`searchAll pages by itself: pass pageSize, not ${name}`);
    }
  }
  return query(allowed, { ...filters, limit: pageSize });
}

function header(headers: FetchResponse["headers"], name: string): number | null {
  const raw = headers.get(name);
  if (raw === null || !/^\s*-?\d+\s*$/.test(raw)) return null;
  return Number(raw.trim());
}

/** The rate-limit and quota headers of an answer; null when it carries none (a 401). */
function rateLimitOf(headers: FetchResponse["headers"]): RateLimit | null {
  const found: RateLimit = {
    limit: header(headers, "X-RateLimit-Limit"),
    remaining: header(headers, "X-RateLimit-Remaining"),
    reset: header(headers, "X-RateLimit-Reset"),
    quotaLimit: header(headers, "X-Quota-Limit"),
    quotaRemaining: header(headers, "X-Quota-Remaining"),
    quotaReset: header(headers, "X-Quota-Reset"),
    retryAfter: retryAfterOf(headers.get("Retry-After")),
  };
  return Object.values(found).every((v) => v === null) ? null : found;
}

/** `Retry-After` in seconds: delta-seconds, or an HTTP date (rounded up from now). */
function retryAfterOf(raw: string | null): number | null {
  if (raw === null) return null;
  if (/^\s*\d+\s*$/.test(raw)) return Number(raw.trim());
  const when = Date.parse(raw);
  return Number.isNaN(when) ? null : Math.max(0, Math.ceil((when - Date.now()) / 1000));
}

function parseAnswer(text: string, status: number, requestId: string | null): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new PropdataError(`The answer is not JSON (HTTP ${status}).`, {
      code: "invalid_response",
      status,
      requestId,
      body: text,
      cause,
    });
  }
}

function invalidAnswer(what: string, rateLimit: RateLimit | null): PropdataError {
  return new PropdataError(`The answer does not have the expected shape: ${what}.`, {
    code: "invalid_response",
    rateLimit,
  });
}

function timeoutSignal(seconds: number): AbortSignal | undefined {
  if (seconds <= 0) return undefined;
  if (typeof AbortSignal !== "undefined" && typeof AbortSignal.timeout === "function") {
    return AbortSignal.timeout(Math.ceil(seconds * 1000));
  }
  if (typeof AbortController === "undefined") return undefined;
  const controller = new AbortController();
  const timer: unknown = setTimeout(() => controller.abort(), seconds * 1000);
  (timer as { unref?: () => void }).unref?.();
  return controller.signal;
}

function connectionError(cause: unknown): APIConnectionError {
  const name = (cause as { name?: unknown } | null)?.name;
  const timedOut = name === "TimeoutError" || name === "AbortError";
  const detail = describe(cause);
  return new APIConnectionError(`The request ${timedOut ? "timed out" : "failed"}: ${detail}`, {
    code: "connection_error",
    cause,
  });
}

/** An error's message with its causes' (undici's "fetch failed" hides the reason in `cause`). */
function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    const message = (e as { message?: unknown }).message;
    const code = (e as { code?: unknown }).code;
    parts.push(typeof message === "string" && message ? message : String(e));
    if (typeof code === "string") parts.push(code);
    e = (e as { cause?: unknown }).cause;
  }
  return [...new Set(parts)].join(": ");
}

/** A JSON body from `values`: only `allowed` names; undefined left out; lists copied. */
function body(values: object, allowed: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values ?? {}) as [string, unknown][]) {
    if (value === undefined) continue;
    if (!allowed.includes(name)) throw new TypeError(`unknown parameter ${JSON.stringify(name)}`);
    out[name] = Array.isArray(value) ? [...value] : value;
  }
  return out;
}

/** A saved search's body: its fields and `filters` checked by name, `bbox` as the wire's string. */
function searchBody(values: SearchUpdateParams): Record<string, unknown> {
  const out = body(values, SEARCH_FIELDS);
  if (values.filters !== undefined) {
    if (values.filters === null || typeof values.filters !== "object") {
      throw new TypeError("filters must be an object of filter names to values");
    }
    const filters: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(values.filters) as [string, unknown][]) {
      if (value === undefined || value === null) continue;
      if (!SEARCH_FILTERS.includes(name)) {
        throw new TypeError(`unknown filter ${JSON.stringify(name)}: filters are those of properties.search`);
      }
      filters[name] = name === "bbox" ? query(["bbox"], { bbox: value })[0]?.[1] : value;
    }
    out.filters = filters;
  }
  return out;
}

// -- the event stream (Server-Sent Events) -------------------------------------------------

interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

/** The Server-Sent Events format, line by line (WHATWG HTML, "event stream interpretation"). */
class SseParser {
  lastId: string | null = null;
  retryMs: number | null = null;
  #event = "";
  #data: string[] = [];

  feed(line: string): SseMessage | null {
    if (line === "") {
      const data = this.#data;
      const event = this.#event;
      this.#data = [];
      this.#event = "";
      return data.length ? { id: this.lastId, event: event || "message", data: data.join("\n") } : null;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.#data.push(value);
    else if (name === "event") this.#event = value;
    else if (name === "id" && !value.includes("\0")) this.lastId = value;
    else if (name === "retry" && /^\d+$/.test(value)) this.retryMs = Number(value);
    return null;
  }
}

function streamed(message: SseMessage): StreamedEvent {
  if (message.id === null) {
    throw new PropdataError("A streamed event has no id.", { code: "invalid_response" });
  }
  let event: Event;
  try {
    event = JSON.parse(message.data) as Event;
  } catch (cause) {
    throw new PropdataError("A streamed event is not JSON.", { code: "invalid_response", body: message.data, cause });
  }
  if (event === null || typeof event !== "object" || typeof event.id !== "string" || typeof event.type !== "string") {
    throw new PropdataError("A streamed event does not have the expected shape.", {
      code: "invalid_response",
      body: message.data,
    });
  }
  return { cursor: message.id, event, body: message.data };
}

/**
 * The request parameters and response models of the propdata API, v1.
 *
 * Each model interface has the field names of its schema in the service's `/openapi.json`
 * (`components.schemas`; the names that differ are in test/openapi.test.ts: `Property` is
 * `PropertyDetail`, `PropertyMatch` is `PropertyLookupItem`, `PropertySummary` is
 * `PropertySearchItem`, `MarketSnapshot` is `Snapshot`, `MarketHistoryEntry` is
 * `HistoryEntry`; the Python SDK uses the same names). A field the service may send as
 * `null` is typed `| null`; every field listed is always present. Dates, months and
 * timestamps stay the strings of the wire (`YYYY-MM-DD`, `YYYY-MM`, ISO 8601 UTC).
 * test/openapi.test.ts compares these declarations with the live document (names, required,
 * nullable, enumerations), so a drift between the two fails the tests.
 */

/** `status` of a property. */
export type PropertyStatus = "forSale" | "recentlySold" | "forRent" | "offMarket";

/** `propertyType` of a property. */
export type PropertyType = "singleFamily" | "condo" | "townhouse" | "multiFamily" | "land";

/** `listingType` of a property (null when it is not listed). */
export type ListingType = "standard" | "newConstruction" | "foreclosure" | "shortSale" | "auction";

/** `priceHistory[].event`. */
export type PriceEventType =
  | "listedForSale"
  | "priceChange"
  | "pendingSale"
  | "sold"
  | "delisted"
  | "relisted"
  | "listedForRent"
  | "rentalRemoved";

/** `priceHistory[].source`. */
export type PriceEventSource = "mls" | "publicRecord" | "agent" | "owner";

/** Sort fields of a property search. */
export type PropertySort = "listPrice" | "daysOnMarket" | "livingArea" | "lastUpdated" | "distance";

/** Sort order of a property search. */
export type SortOrder = "asc" | "desc";

/** `changeType` of a change of the feed. */
export type ChangeType = "created" | "updated" | "removed";

/**
 * `fields` of a property read: wire names, dotted for nested ones (`address.zipCode`), as a
 * list or one comma-separated string. The answer then holds only those fields and `id`.
 */
export type Fields = string | readonly string[];

/** `bbox`: west, south, east, north in decimal degrees, or the wire's string of them. */
export type BoundingBox = string | readonly number[];

/** A record in part: every field optional, at every depth. */
export type DeepPartial<T> = T extends readonly (infer E)[]
  ? DeepPartial<E>[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** What a read with `fields` answers: the fields asked for (any may be absent) and `id`. */
export type Selected<T> = DeepPartial<T> & { id: string };

/** `T`, or `Selected<T>` when the params `P` name `fields`. */
export type Shaped<T, P> = P extends { fields: Fields } ? Selected<T> : T;

// -- request parameters ------------------------------------------------------------------

/** Query of `GET /v1/properties/lookup` (`properties.lookup`). */
export interface LookupParams {
  /** Street line, with the unit if there is one (`1510 First Ave #112`); unless `address`. */
  streetAddress?: string;
  /** City name, any case; with `state`, unless `zipCode` or `address` is given. */
  city?: string;
  /** Two-letter state code, any case; with `city`, unless `zipCode` or `address`. */
  state?: string;
  /** Five-digit ZIP code or ZIP+4; restricts the match to it (and resolves a 409). */
  zipCode?: string;
  /** The whole address on one line (`123 Main St Apt 4, Ames, IA 50010`), alone. */
  address?: string;
  /** The assessor's parcel number (`0526301100`), alone. */
  parcelId?: string;
  /** Only these fields (and `id`): the answer is then a `Selected<PropertyMatch>`. */
  fields?: Fields;
}

/** Query of a read by id (`properties.get`, `history`, `valuation`). */
export interface RecordParams {
  /** Only these fields (and `id`): the answer is then a `Selected<...>`. */
  fields?: Fields;
}

/** Query of `GET /v1/properties/changes` (`properties.changes`). */
export interface ChangesParams {
  /** `meta.nextCursor` of an earlier page; absent: from the oldest change kept. */
  since?: string;
  /** Changes per page: the plan's default when absent, clamped to the plan's maximum. */
  limit?: number;
}

/** Query of `GET /v1/properties` (`properties.search`, `properties.searchAll`). */
export interface PropertySearchParams {
  /** Five-digit ZIP code. */
  zipCode?: string;
  city?: string;
  /** Two-letter state code, any case. */
  state?: string;
  status?: PropertyStatus;
  propertyType?: PropertyType;
  /** Minimum `listPrice`, whole dollars. */
  minPrice?: number;
  /** Maximum `listPrice`, whole dollars. */
  maxPrice?: number;
  minBeds?: number;
  maxBeds?: number;
  minBaths?: number;
  /** Minimum living area, square feet. */
  minSqft?: number;
  /** Maximum living area, square feet. */
  maxSqft?: number;
  minYearBuilt?: number;
  maxDaysOnMarket?: number;
  /** Center of a radius search, decimal degrees (with `longitude` and `radius`). */
  latitude?: number;
  /** Center of a radius search, decimal degrees (with `latitude` and `radius`). */
  longitude?: number;
  /** Miles, above 0 and at most 100 (with `latitude` and `longitude`). */
  radius?: number;
  /** `[west, south, east, north]` in decimal degrees; not with a radius. */
  bbox?: BoundingBox;
  /** Page size: the plan's default when absent, clamped to the plan's maximum. */
  limit?: number;
  /** Results to skip; not with `cursor`. */
  offset?: number;
  /** `meta.nextCursor` of the previous page of the same search: the next page, at any depth. */
  cursor?: string;
  /** Sort field, default `lastUpdated`; `distance` needs a radius. */
  sort?: PropertySort;
  /** Sort order, default `desc` (`asc` for `distance`). */
  order?: SortOrder;
  /** Only these fields (and `id`) of each item: items are then `Selected<PropertySummary>`. */
  fields?: Fields;
}

/** Query of `GET /v1/markets/search` (`markets.search`, `markets.searchAll`). */
export interface MarketSearchParams {
  city?: string;
  /** Two-letter state code, any case. */
  state?: string;
  /** A ZIP code or its first 1 to 4 digits. */
  zipCode?: string;
  /** Page size: the plan's default when absent, clamped to the plan's maximum. */
  limit?: number;
  /** Results to skip. */
  offset?: number;
}

/** Query of `GET /v1/markets/{zipCode}/history` (`markets.history`). */
export interface MarketHistoryParams {
  /** Months of history, 1 to 60; default 12. */
  months?: number;
}

// -- response models ---------------------------------------------------------------------

/** A full address (`Property.address`). */
export interface Address {
  streetAddress: string | null;
  city: string;
  /** Two-letter state code, upper case. */
  state: string;
  /** Five digits. */
  zipCode: string;
  /** County name without "County" ("Story"); optional in the OpenAPI document. */
  county?: string | null;
  /** Five-digit state+county FIPS code ("19169"); optional in the OpenAPI document. */
  fipsCode?: string | null;
}

/** The address of a lookup or search item, or of a comparable sale. */
export interface ShortAddress {
  streetAddress: string | null;
  city: string;
  state: string;
  zipCode: string;
}

/** A property at the street address a lookup named (a lookup error's `candidates`). */
export interface Candidate {
  id: string;
  address: CandidateAddress;
}

/** A candidate's address: the ShortAddress shape (the OpenAPI test holds the two equal). */
export interface CandidateAddress {
  streetAddress: string | null;
  city: string;
  state: string;
  zipCode: string;
}

export interface Coordinates {
  latitude: number;
  longitude: number;
}

export interface Scores {
  walkability: number | null;
  transit: number | null;
  bike: number | null;
}

/** A value or rent estimate, whole US dollars; low/high an 85 % interval. */
export interface Estimate {
  value: number;
  low: number;
  high: number;
  /** `YYYY-MM-DD`. */
  asOfDate: string;
}

/** One event of `priceHistory`, newest first. */
export interface PriceEvent {
  /** `YYYY-MM-DD`. */
  date: string;
  event: PriceEventType;
  price: number | null;
  source: PriceEventSource;
}

/** One year of `taxHistory`, newest first. */
export interface TaxRecord {
  year: number;
  taxPaid: number | null;
  assessedValue: number | null;
}

/** The full property record: `GET /v1/properties/{id}` (`properties.get`). */
export interface Property {
  id: string;
  status: PropertyStatus;
  listPrice: number | null;
  address: Address;
  bedroomsTotal: number | null;
  bathroomsTotal: number | null;
  livingArea: number | null;
  lotSize: number | null;
  yearBuilt: number | null;
  propertyType: PropertyType | null;
  daysOnMarket: number | null;
  priceHistory: PriceEvent[];
  taxHistory: TaxRecord[];
  scores: Scores | null;
  coordinates: Coordinates | null;
  /** ISO 8601 UTC timestamp. */
  lastUpdated: string;
  listingType: ListingType | null;
  originalListPrice: number | null;
  previousListPrice: number | null;
  lastPriceChangeDate: string | null;
  removedDate: string | null;
  rentEstimate: Estimate | null;
  valueEstimate: Estimate | null;
  /** 12 × rent / value, a fraction. */
  grossYield: number | null;
  pricePerSquareFoot: number | null;
  stories: number | null;
  /** The assessor's parcel number. */
  parcelId: string | null;
  garageSpaces: number | null;
  /** Finished area below grade, square feet. */
  basementFinishedArea: number | null;
  fireplaces: number | null;
  /** The assessor's grade of material and finish, 1-10. */
  overallQuality: number | null;
  /** The assessor's grade of condition, 1-10. */
  overallCondition: number | null;
}

/** `GET /v1/properties/lookup` (`properties.lookup`). */
export interface PropertyMatch {
  id: string;
  status: PropertyStatus;
  listPrice: number | null;
  address: ShortAddress;
  bedroomsTotal: number | null;
  bathroomsTotal: number | null;
  livingArea: number | null;
  lastUpdated: string;
}

/** One item of a property search page: what a lookup answers, and more. */
export interface PropertySummary extends PropertyMatch {
  daysOnMarket: number | null;
  lastSalePrice: number | null;
  lastSaleDate: string | null;
  /** Miles from a radius search's center, two decimals; absent without a radius. */
  distanceMiles?: number | null;
}

/** `GET /v1/properties/{id}/history` (`properties.history`). */
export interface PropertyHistory {
  id: string;
  priceHistory: PriceEvent[];
  taxHistory: TaxRecord[];
}

/** A comparable sale of a valuation. */
export interface Comparable {
  id: string;
  address: ShortAddress;
  distanceMiles: number | null;
  saleDate: string;
  salePrice: number;
  /** 0 to 1; 1 is most similar. */
  similarity: number;
}

/** `GET /v1/properties/{id}/valuation` (`properties.valuation`). */
export interface Valuation {
  id: string;
  valueEstimate: Estimate | null;
  rentEstimate: Estimate | null;
  grossYield: number | null;
  comparables: Comparable[];
}

/** The `meta` of a search page. */
export interface PageMeta {
  /** Exact number of matches. */
  total: number;
  /** The page size applied. */
  limit: number;
  /** Results skipped. */
  offset: number;
}

/** A search page: `{meta, data}`. */
export interface Page<T> {
  meta: PageMeta;
  data: T[];
}

/** The `meta` of a property search page: `PageMeta` and the next page's cursor. */
export interface SearchMeta {
  /** Exact number of matches. */
  total: number;
  /** The page size applied. */
  limit: number;
  /** Results skipped (with `cursor`: rows the earlier pages of the walk delivered). */
  offset: number;
  /** Pass it as `cursor` (same filters, sort and order) for the next page; null on the last. */
  nextCursor: string | null;
}

/** A property search page: `{meta, data}`, with the cursor of the next page. */
export interface PropertyPage<T> {
  meta: SearchMeta;
  data: T[];
}

/** One change of the feed: drop your copy for a "removed" one, fetch the record to apply any
 * other (a 404 means it was removed since). */
export interface PropertyChange {
  id: string;
  changeType: ChangeType;
  /** The record's `lastUpdated` after the change (before it, for a removal), ISO 8601 UTC. */
  lastUpdated: string;
}

/** The `meta` of a page of the change feed. */
export interface ChangesMeta {
  /** The page size applied. */
  limit: number;
  /** Pass it as `since` for the next page; never null. */
  nextCursor: string;
}

/** A page of the change feed: `{meta, data}`; an empty `data` means caught up. */
export interface ChangesPage {
  meta: ChangesMeta;
  data: PropertyChange[];
}

/** The market statistics of a ZIP code as of `date`. */
export interface MarketSnapshot {
  /** `YYYY-MM-DD`. */
  date: string;
  medianListPrice: number | null;
  medianSoldPrice: number | null;
  activeListings: number;
  newListings30d: number;
  soldLast30d: number;
  medianDaysOnMarket: number | null;
  averagePricePerSqft: number | null;
  inventoryMonths: number | null;
  listToSoldRatio: number | null;
}

/** `GET /v1/markets/{zipCode}` (`markets.get`) and each item of a market search. */
export interface Market {
  zipCode: string;
  city: string;
  state: string;
  snapshot: MarketSnapshot;
}

/** One month of market history, newest first. */
export interface MarketHistoryEntry {
  /** `YYYY-MM`. */
  month: string;
  medianListPrice: number | null;
  medianSoldPrice: number | null;
  activeListings: number;
  soldCount: number;
  medianDaysOnMarket: number | null;
  averagePricePerSqft: number | null;
}

/** `GET /v1/markets/{zipCode}/history` (`markets.history`). */
export interface MarketHistory {
  zipCode: string;
  city: string;
  state: string;
  history: MarketHistoryEntry[];
}

/** The limits in force for a key. */
export interface Limits {
  perMinute: number;
  /** Null for an unlimited daily quota. */
  daily: number | null;
  defaultPageSize: number;
  maxPageSize: number;
}

/** The use of one window. */
export interface WindowUsage {
  used: number;
  remaining: number;
  /** Unix seconds at which the oldest counted request leaves the window. */
  reset: number;
}

export interface Usage {
  minute: WindowUsage;
  /** Null for an unlimited daily quota. */
  day: WindowUsage | null;
}

/** One file of an export snapshot: its path in the snapshot, rows, size and SHA-256 (hex). */
export interface ExportFile {
  name: string;
  rows: number;
  bytes: number;
  sha256: string;
}

/**
 * `GET /v1/exports` (`exports.list`, Pro and Enterprise): a snapshot of the whole data set
 * at one data version. After loading it, follow `properties.iterChanges({ since: feedCursor })`.
 */
export interface Export {
  id: string;
  createdAt: string;
  dataVersion: number;
  format: "parquet" | "csv";
  feedCursor: string;
  files: ExportFile[];
  rows: number;
}

/** `GET /v1/auth/status` (`auth.status`): the calling key, its limits and usage. */
export interface AuthStatus {
  keyId: string;
  name: string;
  plan: string;
  status: string;
  limits: Limits;
  usage: Usage;
}

/** The body of every error answer, inside `{"error": ...}`. */
export interface ErrorBody {
  code: string;
  message: string;
  status: number;
  requestId: string;
  /** The offending parameter; on 400 answers only. */
  parameter?: string | null;
  /** A lookup's 404 and 409: up to 5 properties at the street address it named. */
  candidates?: Candidate[] | null;
}

/** Query of `properties.searchAll`: the search filters and sort, and the page size. */
export interface PropertySearchAllParams
  extends Omit<PropertySearchParams, "limit" | "offset" | "cursor"> {
  /** The `limit` of each request: the plan's default page size when absent. */
  pageSize?: number;
}

/** Query of `properties.iterChanges`: where to start, and the page size. */
export interface IterChangesParams {
  /** `meta.nextCursor` of an earlier page; absent or null: from the oldest change kept. */
  since?: string | null;
  /** The `limit` of each request: the plan's default page size when absent. */
  pageSize?: number;
}

/** Query of `markets.searchAll`: the search filters and the page size. */
export interface MarketSearchAllParams extends Omit<MarketSearchParams, "limit" | "offset"> {
  /** The `limit` of each request: the plan's default page size when absent. */
  pageSize?: number;
}

// -- events: saved searches, the event log, webhooks ----------------------------------

/** `type` of an event. */
export type EventType =
  | "search.entered"
  | "search.exited"
  | "property.listed"
  | "property.priceChanged"
  | "property.statusChanged"
  | "property.estimateChanged"
  | "property.updated"
  | "market.updated"
  | "webhook.test";

/** `status` of a webhook endpoint. */
export type WebhookStatus = "enabled" | "disabled";

/** `disabledReason` of a disabled endpoint: a 410 (`gone`), 5 days of failures
 * (`failing`), or its owner (`owner`). */
export type DisabledReason = "gone" | "failing" | "owner";

/** `status` of a delivery. */
export type DeliveryStatus = "pending" | "succeeded" | "failed";

/** `error` of a failed delivery attempt. */
export type DeliveryError =
  | "timeout"
  | "connection"
  | "tls"
  | "redirect"
  | "http_status"
  | "blocked_address"
  | "owner";

/** A saved search's `filters`: `GET /v1/properties`' filters (not paging, sort or fields). */
export type SearchFilters = Omit<
  PropertySearchParams,
  "limit" | "offset" | "cursor" | "sort" | "order" | "fields"
>;

/** Body of `POST /v1/searches` (`searches.create`): filters, ids or both. */
export interface SearchCreateParams {
  /** 1 to 100 characters. */
  name: string;
  filters?: SearchFilters;
  /** At most 1,000 property ids to watch; a record must pass the filters too. */
  propertyIds?: readonly string[];
}

/** Body of `PATCH /v1/searches/{id}` (`searches.update`): what to change. */
export interface SearchUpdateParams {
  name?: string;
  filters?: SearchFilters;
  propertyIds?: readonly string[];
}

/** A saved search. */
export interface SavedSearch {
  /** `srch_...`. */
  id: string;
  name: string;
  /** The filters by their wire names, as saved. */
  filters: Record<string, unknown>;
  propertyIds: string[];
  /** ISO 8601 UTC. */
  createdAt: string;
  /** How many records match: the volume of events to expect, exact for data version `dataVersion`. */
  matchCount: number;
  /** The data version (it grows with every load of the records) `matchCount` was counted at. */
  dataVersion: number;
}

/** Query of `GET /v1/searches`, `/v1/webhooks` and a webhook's deliveries. */
export interface ListParams {
  limit?: number;
  offset?: number;
}

/** Query of a `...All` walk of a list: the page size. */
export interface ListAllParams {
  /** The `limit` of each request: the plan's default page size when absent. */
  pageSize?: number;
}

/**
 * `data` of a property event (`search.*`, `property.*`): the search it matched, the record
 * (its search item, after the change; as it was for `search.exited` of a removed record),
 * the changed fields and their earlier values. `dropped`: events missed past the plan's
 * daily cap, on the first event produced after it.
 */
export interface PropertyEventData {
  searchId: string;
  searchName: string;
  property: PropertySummary;
  previous: Record<string, unknown>;
  changes: string[];
  dropped?: number;
}

/** `data` of a `market.updated` event. */
export interface MarketEventData {
  searchId: string;
  searchName: string;
  zipCode: string;
  snapshot: MarketSnapshot;
  previous: Record<string, unknown>;
  dropped?: number;
}

/** One event of the log, the stream, and a webhook delivery's body. */
export interface Event {
  /** `evt_...`: the same on every delivery, retry and replay (dedupe by it). */
  id: string;
  /** One of `EventType`'s values (a string, so a type added to the API later still reads). */
  type: string;
  /** ISO 8601 UTC. */
  timestamp: string;
  /** The owner's events are numbered 1, 2, 3, ... with no gap (0 for `webhook.test`): a
   * receiver that sees 7 after 5 knows it missed 6. */
  sequence: number;
  /** By `type`: `PropertyEventData`, `MarketEventData`, or `{}` for `webhook.test`. */
  data: Record<string, unknown>;
}

/** Query of `GET /v1/events` (`events.list`). */
export interface EventsParams {
  /** `meta.nextCursor` of an earlier page (or a streamed event's cursor); absent: the oldest kept. */
  since?: string;
  /** Only these types, as a list or one comma-separated string. */
  types?: readonly EventType[] | string;
  /** Only this saved search's events. */
  searchId?: string;
  /** Page size: the plan's default when absent, clamped to the plan's maximum. */
  limit?: number;
}

/** Query of `events.follow`: where to start, the filters and the page size. */
export interface FollowEventsParams extends Omit<EventsParams, "limit" | "since"> {
  since?: string | null;
  pageSize?: number;
}

/** The `meta` of a page of events. */
export interface EventsMeta {
  limit: number;
  /** Pass it as `since` for the next page; never null. */
  nextCursor: string;
}

/** A page of events, oldest first; an empty `data` means caught up. */
export interface EventsPage {
  meta: EventsMeta;
  data: Event[];
}

/** Options of `events.stream`. */
export interface StreamParams {
  /** Start after this cursor (a streamed event's, or an events page's `nextCursor`); absent: from now. */
  since?: string | null;
  /** Only these types (applied by the client: the stream sends every event). */
  types?: readonly EventType[] | string;
  /** Only this saved search's events (applied by the client). */
  searchId?: string;
  /** Openings after the first before giving up; absent: no bound. */
  maxReconnects?: number;
  /** Stops the stream (and closes its connection) when aborted. */
  signal?: AbortSignal;
}

/** One event of the stream: the event, its cursor (the SSE `id:`) and its JSON as sent. */
export interface StreamedEvent {
  cursor: string;
  event: Event;
  body: string;
}

/** Body of `POST /v1/webhooks` (`webhooks.create`). */
export interface WebhookCreateParams {
  /** `https://` (or `http://` inside the service's allowed networks). */
  url: string;
  /** Only these event types; absent: all. */
  eventTypes?: readonly EventType[];
  /** Only these saved searches' events; absent: all. */
  searchIds?: readonly string[];
  description?: string;
}

/** Body of `PATCH /v1/webhooks/{id}` (`webhooks.update`). */
export interface WebhookUpdateParams {
  url?: string;
  eventTypes?: readonly EventType[];
  searchIds?: readonly string[];
  description?: string;
  /** `enabled` turns a disabled endpoint back on: its backlog is delivered, oldest first. */
  status?: WebhookStatus;
}

/** A webhook endpoint. */
export interface Webhook {
  /** `wh_...`. */
  id: string;
  url: string;
  /** null: every type. */
  eventTypes: EventType[] | null;
  /** null: every saved search. */
  searchIds: string[] | null;
  description: string | null;
  status: WebhookStatus;
  disabledReason: DisabledReason | null;
  /** ISO 8601 UTC. */
  createdAt: string;
}

/** The endpoint `webhooks.create` made: a `Webhook` with its signing secret (shown this once). */
export interface CreatedWebhook extends Webhook {
  /** `whsec_` + base64: verify deliveries with it. */
  secret: string;
}

/** A row of an endpoint's deliveries (`webhooks.deliveries`): one attempt made (`succeeded`
 * or `failed`, with that attempt's answer), or a delivery waiting for its attempt number
 * `attempt` (`pending`, due at `nextAttemptAt`). */
export interface Delivery {
  eventId: string;
  type: EventType;
  attempt: number;
  status: DeliveryStatus;
  responseStatus: number | null;
  error: DeliveryError | null;
  durationMs: number | null;
  attemptedAt: string | null;
  nextAttemptAt: string | null;
}

// -- headers -----------------------------------------------------------------------------

/**
 * The rate-limit and quota headers of one answer (`client.lastRateLimit`, `error.rateLimit`).
 *
 * `limit`/`remaining`/`reset` describe the sliding minute (`X-RateLimit-*`); `quota*` the
 * rolling 24 hours (`X-Quota-*`, null for an unlimited quota); `retryAfter` is the
 * `Retry-After` of a 429 or 503. Resets are unix seconds. A field is null when the answer
 * did not carry its header.
 */
export interface RateLimit {
  limit: number | null;
  remaining: number | null;
  reset: number | null;
  quotaLimit: number | null;
  quotaRemaining: number | null;
  quotaReset: number | null;
  retryAfter: number | null;
}

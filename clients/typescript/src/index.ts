/**
 * `@propdata/client`: the TypeScript client of the propdata API (property records and ZIP
 * market statistics). Zero dependencies: it uses the global `fetch` (Node 18+, browsers).
 */

export {
  Auth,
  Client,
  DEFAULT_BASE_URL,
  DEFAULT_ETAG_CACHE,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_WAIT,
  DEFAULT_TIMEOUT,
  Events,
  Exports,
  Markets,
  Properties,
  Searches,
  Webhooks,
  retryWait,
} from "./client.js";
export type { ClientOptions, FetchInit, FetchLike, FetchResponse } from "./client.js";
export {
  APIConnectionError,
  AmbiguousAddressError,
  AuthenticationError,
  InvalidParameterError,
  NotFoundError,
  PlanLimitError,
  PropdataError,
  QuotaExceededError,
  RateLimitError,
  ServiceUnavailableError,
  WebhookVerificationError,
} from "./errors.js";
export type { PropdataErrorInit } from "./errors.js";
export type * from "./types.js";
export { VERSION } from "./version.js";

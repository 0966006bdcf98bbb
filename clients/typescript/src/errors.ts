/**
 * The errors the client throws: one class per kind of answer, all under PropdataError.
 *
 * | Class                     | When                                                    |
 * |---------------------------|---------------------------------------------------------|
 * | InvalidParameterError     | 400 `invalid_parameter` (`parameter` names it)          |
 * | AuthenticationError       | 401 `missing_api_key`, `invalid_api_key`, `revoked_api_key` |
 * | NotFoundError             | 404 `not_found` (`candidates` after a lookup)           |
 * | AmbiguousAddressError     | 409 `ambiguous_address` (`candidates`, `zipCodes`, ...) |
 * | RateLimitError            | 429 `rate_limit_exceeded`                               |
 * | QuotaExceededError        | 429 `quota_exceeded` (a RateLimitError)                 |
 * | PlanLimitError            | 403 `plan_limit_reached` (saved searches, webhooks)     |
 * | ServiceUnavailableError   | 503 `service_unavailable`                               |
 * | APIConnectionError        | no answer: connection refused or reset, DNS, timeout    |
 * | PropdataError             | any other status (405, 431, 500, ...)                   |
 */

import type { Candidate, RateLimit } from "./types.js";

export interface PropdataErrorInit {
  code: string;
  status?: number | null;
  requestId?: string | null;
  parameter?: string | null;
  /** A lookup's 404 and 409: the properties at the street address it named. */
  candidates?: Candidate[] | null;
  retryAfter?: number | null;
  rateLimit?: RateLimit | null;
  body?: unknown;
  cause?: unknown;
}

/** Base of every error this client throws. */
export class PropdataError extends Error {
  /** The service's error code (`not_found`, `rate_limit_exceeded`, ...). */
  readonly code: string;
  /** The HTTP status; null when no answer came (APIConnectionError). */
  readonly status: number | null;
  /** The request's id (`req_...`), from `X-Request-Id`; quote it when reporting a problem. */
  readonly requestId: string | null;
  /** Seconds the service asked to wait (`Retry-After`), on 429 and 503 answers. */
  readonly retryAfter: number | null;
  /** The rate-limit and quota headers of the answer (null when it had none, as a 401). */
  readonly rateLimit: RateLimit | null;
  /** The parsed error body, or the raw text when it was not JSON. */
  readonly body: unknown;

  constructor(message: string, init: PropdataErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status ?? null;
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.rateLimit = init.rateLimit ?? null;
    this.body = init.body;
  }
}

/** 400 `invalid_parameter`: `parameter` names the offending parameter. */
export class InvalidParameterError extends PropdataError {
  /** The offending query or path parameter (`months`, `zipCode`, ...). */
  readonly parameter: string | null;

  constructor(message: string, init: PropdataErrorInit) {
    super(message, init);
    this.parameter = init.parameter ?? null;
  }
}

/** 401: the key is missing, malformed, unknown or revoked (see `code`). */
export class AuthenticationError extends PropdataError {}

/**
 * 404 `not_found`: no such property, no exact address match, no market for the ZIP code.
 * After a lookup, `candidates` lists up to 5 properties at the street address (empty when
 * the store holds none there).
 */
export class NotFoundError extends PropdataError {
  readonly candidates: Candidate[];

  constructor(message: string, init: PropdataErrorInit) {
    super(message, init);
    this.candidates = init.candidates ?? [];
  }
}

/** 409 `ambiguous_address`: a lookup matched several properties. */
export class AmbiguousAddressError extends PropdataError {
  /** The candidate ZIP codes named by the answer; add one as `zipCode` to choose. */
  readonly zipCodes: string[];
  /** The candidate property ids, when they share one ZIP code (add the unit to choose). */
  readonly propertyIds: string[];
  /** Up to 5 of the matching properties, with their ids and addresses. */
  readonly candidates: Candidate[];

  constructor(message: string, init: PropdataErrorInit) {
    super(message, init);
    const named = parseCandidates(message);
    this.zipCodes = named.zipCodes;
    this.propertyIds = named.propertyIds;
    this.candidates = init.candidates ?? [];
  }
}

/** 429 `rate_limit_exceeded`: the per-minute limit (or the failed-request guard). */
export class RateLimitError extends PropdataError {}

/** 429 `quota_exceeded`: the rolling 24-hour quota. A RateLimitError too. */
export class QuotaExceededError extends RateLimitError {}

/** 403 `plan_limit_reached`: the account holds as many saved searches or webhook endpoints
 * as its plan allows; the message names the limit and the plan that raises it. */
export class PlanLimitError extends PropdataError {}

/** A webhook delivery whose headers, timestamp or signature do not verify (`verifyWebhook`
 * in `@propdata/client/webhooks`): answer it with a 400 and do nothing with it. */
export class WebhookVerificationError extends PropdataError {}

/** 503 `service_unavailable`: a backing store is unreachable; try again shortly. */
export class ServiceUnavailableError extends PropdataError {}

/** No answer at all: the connection failed or timed out (`code` is `connection_error`). */
export class APIConnectionError extends PropdataError {}

/**
 * The candidates a 409 message names. The service writes either
 * "The address matches properties in several ZIP codes: 10004, 10006; add zipCode ..." or
 * "The address matches 2 properties in ZIP code 50112 (doc-3, doc-4); add the unit ...".
 */
export function parseCandidates(message: string): { zipCodes: string[]; propertyIds: string[] } {
  const several = /ZIP codes:\s*([0-9,\s]+)/.exec(message);
  if (several?.[1] !== undefined) {
    return { zipCodes: several[1].match(/\d{5}/g) ?? [], propertyIds: [] };
  }
  const one = /ZIP code (\d{5})(?:\s*\(([^)]*)\))?/.exec(message);
  if (one?.[1] !== undefined) {
    const ids = (one[2] ?? "")
      .split(",")
      .map((id) => id.trim())
      .filter((id) => id.length > 0);
    return { zipCodes: [one[1]], propertyIds: ids };
  }
  return { zipCodes: [], propertyIds: [] };
}

const BY_CODE: Record<string, typeof PropdataError> = {
  invalid_parameter: InvalidParameterError,
  missing_api_key: AuthenticationError,
  invalid_api_key: AuthenticationError,
  revoked_api_key: AuthenticationError,
  not_found: NotFoundError,
  ambiguous_address: AmbiguousAddressError,
  rate_limit_exceeded: RateLimitError,
  quota_exceeded: QuotaExceededError,
  service_unavailable: ServiceUnavailableError,
  plan_limit_reached: PlanLimitError,
};

const BY_STATUS: Record<number, typeof PropdataError> = {
  400: InvalidParameterError,
  401: AuthenticationError,
  404: NotFoundError,
  429: RateLimitError,
  503: ServiceUnavailableError,
};

const DEFAULT_CODES: Record<number, string> = {
  400: "invalid_parameter",
  401: "invalid_api_key",
  404: "not_found",
  405: "method_not_allowed",
  409: "ambiguous_address",
  429: "rate_limit_exceeded",
  500: "internal_error",
  502: "bad_gateway",
  503: "service_unavailable",
  504: "gateway_timeout",
};

/** The error for an answer with `status`, from its body (the contract's error shape). */
export function errorFromResponse(
  status: number,
  text: string,
  requestId: string | null,
  rateLimit: RateLimit | null,
): PropdataError {
  const retryAfter = rateLimit?.retryAfter ?? null;
  let body: unknown = text;
  let code = DEFAULT_CODES[status] ?? `http_${status}`;
  let message = `HTTP ${status}`;
  let parameter: string | null = null;
  let candidates: Candidate[] | null = null;
  try {
    body = JSON.parse(text);
  } catch {
    if (text.trim()) message = `HTTP ${status}: ${text.trim().slice(0, 200)}`;
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (error !== null && typeof error === "object") {
    const e = error as Record<string, unknown>;
    if (typeof e.code === "string") code = e.code;
    if (typeof e.message === "string") message = e.message;
    if (typeof e.parameter === "string") parameter = e.parameter;
    if (Array.isArray(e.candidates)) candidates = e.candidates as Candidate[];
    if (requestId === null && typeof e.requestId === "string") requestId = e.requestId;
  }
  const Class = BY_CODE[code] ?? BY_STATUS[status] ?? PropdataError;
  return new Class(message, {
    code, status, requestId, parameter, candidates, retryAfter, rateLimit, body,
  });
}

/// <reference types="node" />
/**
 * `@propdata/client/webhooks`: check a webhook delivery's signature (Standard Webhooks), on
 * Node (it uses `node:crypto`; the main entry point stays free of Node modules).
 *
 * ```ts
 * import { verifyWebhook, WebhookVerificationError } from "@propdata/client/webhooks";
 *
 * // body: the request's raw text or bytes, never parsed and re-encoded
 * const event = verifyWebhook(body, request.headers, process.env.PROPDATA_WEBHOOK_SECRET!);
 * ```
 *
 * The API signs as Standard Webhooks does: `webhook-id`, `webhook-timestamp` (unix
 * seconds), `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`,
 * keyed with the secret's bytes, base64 after `whsec_`; several, space-separated, while a
 * secret is rotated).
 */

import { createHmac, timingSafeEqual } from "node:crypto";

import { WebhookVerificationError } from "./errors.js";
import type { Event } from "./types.js";

export { WebhookVerificationError } from "./errors.js";

/** How far, in seconds, a delivery's timestamp may be from now. */
export const WEBHOOK_TOLERANCE = 5 * 60;

/** Headers as Node's `IncomingMessage.headers`, a fetch `Headers`, or a plain record. */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Record<string, string | readonly string[] | undefined>;

export interface VerifyOptions {
  /** Seconds a timestamp may be from now; default 300. */
  tolerance?: number;
  /** Now, in unix seconds (for tests); default the clock. */
  now?: number;
}

/** The key bytes of a `whsec_...` secret (the prefix is optional, padding too). */
function key(secret: string): Buffer {
  if (typeof secret !== "string") throw new TypeError("the webhook secret must be a string");
  const text = secret.trim().replace(/^whsec_/, "");
  const bytes = Buffer.from(text, "base64");
  if (!text || bytes.length === 0) {
    throw new TypeError("not a webhook secret (whsec_ + base64)");
  }
  return bytes;
}

function header(headers: WebhookHeaders, name: string): string | null {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name);
  }
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (k.toLowerCase() !== name) continue;
    if (typeof v === "string") return v;
    if (Array.isArray(v) && typeof v[0] === "string") return v.join(" ");
  }
  return null;
}

function text(payload: string | Uint8Array): string {
  return typeof payload === "string" ? payload : Buffer.from(payload).toString("utf8");
}

/** The `webhook-signature` value (`v1,...`) of a body, as the API makes it. */
export function signWebhook(
  secret: string,
  messageId: string,
  timestamp: number,
  payload: string | Uint8Array,
): string {
  const mac = createHmac("sha256", key(secret))
    .update(`${messageId}.${Math.floor(timestamp)}.${text(payload)}`, "utf8")
    .digest("base64");
  return `v1,${mac}`;
}

/**
 * The event a webhook delivery carries, once its signature and timestamp check out.
 *
 * `payload` is the body exactly as received; `secret` the endpoint's `whsec_...` secret,
 * or several (the old and the new one while you rotate it). Throws
 * WebhookVerificationError when a header is missing, the timestamp is more than 5 minutes
 * from now, or no `v1` signature matches (compared in constant time); TypeError when
 * `secret` is not a secret.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): Event {
  const secrets = typeof secret === "string" ? [secret] : [...secret];
  if (secrets.length === 0) throw new TypeError("no webhook secret given");
  const keys = secrets.map(key);
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("The webhook does not verify: missing required headers.", {
      code: "invalid_webhook",
    });
  }
  const seconds = Number(timestamp.trim());
  if (!/^\s*\d+\s*$/.test(timestamp) || !Number.isSafeInteger(seconds)) {
    throw new WebhookVerificationError("The webhook does not verify: invalid webhook-timestamp.", {
      code: "invalid_webhook",
    });
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.tolerance ?? WEBHOOK_TOLERANCE;
  if (seconds < now - tolerance || seconds > now + tolerance) {
    const which = seconds < now ? "too old" : "too new";
    throw new WebhookVerificationError(`The webhook does not verify: message timestamp ${which}.`, {
      code: "invalid_webhook",
    });
  }
  const body = text(payload);
  const signed = Buffer.from(`${id}.${seconds}.${body}`, "utf8");
  const expected = keys.map((k) => createHmac("sha256", k).update(signed).digest());
  let matched = false;
  for (const versioned of signatures.split(" ")) {
    const comma = versioned.indexOf(",");
    if (comma === -1 || versioned.slice(0, comma) !== "v1") continue;
    const given = Buffer.from(versioned.slice(comma + 1), "base64");
    for (const mac of expected) {
      // every candidate is compared (no early exit on the first mismatch)
      if (given.length === mac.length && timingSafeEqual(given, mac)) matched = true;
    }
  }
  if (!matched) {
    throw new WebhookVerificationError("The webhook does not verify: no matching signature found.", {
      code: "invalid_webhook",
    });
  }
  let event: Event;
  try {
    event = JSON.parse(body) as Event;
  } catch (cause) {
    throw new WebhookVerificationError("The webhook verifies but its body is not JSON.", {
      code: "invalid_event",
      cause,
    });
  }
  if (event === null || typeof event !== "object" || typeof event.id !== "string" || typeof event.type !== "string") {
    throw new WebhookVerificationError("The webhook verifies but its body is not an event.", {
      code: "invalid_event",
    });
  }
  return event;
}

/** The Standard Webhooks headers of a delivery of `payload` (and its content type). */
export function webhookHeaders(
  secret: string,
  messageId: string,
  timestamp: number,
  payload: string | Uint8Array,
): Record<string, string> {
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(timestamp)),
    "webhook-signature": signWebhook(secret, messageId, timestamp, payload),
    "content-type": "application/json",
  };
}

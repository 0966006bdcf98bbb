// `verifyWebhook` (`@propdata/client/webhooks`): the Standard Webhooks test vectors (the
// cases of the specification's own libraries' tests, libraries/*/ in
// github.com/standard-webhooks/standard-webhooks), and signatures made by the reference
// Python library, `standardwebhooks`, with the repository's Python.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { describe, it } from "node:test";

import {
  WebhookVerificationError,
  signWebhook,
  verifyWebhook,
  webhookHeaders,
} from "@propdata/client/webhooks";

import { ownServer, server } from "./harness.js";

// The specification's vector: this secret, id, timestamp and body sign to EXPECTED.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TIMESTAMP = 1614265330;
const PAYLOAD = '{"test": 2432232314}';
const EXPECTED = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const FOREIGN = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";

const EVENT = JSON.stringify({ id: "evt_01", type: "webhook.test", timestamp: "2026-11-25T12:00:00.000Z", sequence: 7, data: {} });

/** Headers signed by hand, as the specification describes (not by the code tested). */
function signed(payload: string, secret = SECRET, at = Math.floor(Date.now() / 1000)): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const mac = createHmac("sha256", key).update(`${MSG_ID}.${at}.${payload}`).digest("base64");
  return { "webhook-id": MSG_ID, "webhook-timestamp": String(at), "webhook-signature": `v1,${mac}` };
}

function fails(payload: string, headers: Record<string, string>, secret: string | string[] = SECRET) {
  assert.throws(() => verifyWebhook(payload, headers, secret), WebhookVerificationError);
}

describe("verifyWebhook: the Standard Webhooks vectors", () => {
  it("signs the specification's vector as expected", () => {
    assert.equal(signWebhook(SECRET, MSG_ID, TIMESTAMP, PAYLOAD), EXPECTED);
    assert.equal(signWebhook(SECRET.slice("whsec_".length), MSG_ID, TIMESTAMP, PAYLOAD), EXPECTED);
    // verified at its own time, with the timestamp tolerance measured from then
    const headers = { "webhook-id": MSG_ID, "webhook-timestamp": String(TIMESTAMP), "webhook-signature": EXPECTED };
    assert.throws(() => verifyWebhook(PAYLOAD, headers, SECRET, { now: TIMESTAMP }), /not an event/);
    fails(PAYLOAD, headers); // five years old today
  });

  it("a valid signature verifies and gives the event; header names in any case; a Headers object", () => {
    assert.equal(verifyWebhook(EVENT, signed(EVENT), SECRET).sequence, 7);
    assert.equal(verifyWebhook(new TextEncoder().encode(EVENT), signed(EVENT), SECRET).id, "evt_01");
    const upper = Object.fromEntries(Object.entries(signed(EVENT)).map(([k, v]) => [k.toUpperCase(), v]));
    assert.equal(verifyWebhook(EVENT, upper, SECRET).id, "evt_01");
    assert.equal(verifyWebhook(EVENT, new Headers(signed(EVENT)), SECRET).id, "evt_01");
  });

  for (const missing of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    it(`a missing ${missing} fails`, () => {
      const headers = signed(EVENT);
      delete headers[missing];
      fails(EVENT, headers);
    });
  }

  it("a wrong, partial or malformed signature fails", () => {
    const valid = signed(EVENT)["webhook-signature"] as string;
    for (const signature of [FOREIGN, "v1,", "v1,dawfeoifkpqwoekfpqoekf", "v1", `v2,${valid.slice(3)}`, valid.slice(0, -4), "", "a,,b"]) {
      fails(EVENT, { ...signed(EVENT), "webhook-signature": signature });
    }
  });

  it("a timestamp more than five minutes away, or not a number, fails", () => {
    const now = Math.floor(Date.now() / 1000);
    for (const at of [now - 301, now + 301, now - 3600]) fails(EVENT, signed(EVENT, SECRET, at));
    fails(EVENT, { ...signed(EVENT), "webhook-timestamp": "hello" });
    assert.equal(verifyWebhook(EVENT, signed(EVENT, SECRET, now - 299), SECRET).id, "evt_01");
  });

  it("one matching signature among several verifies", () => {
    const headers = signed(EVENT);
    headers["webhook-signature"] = [FOREIGN, `v2,${FOREIGN.slice(3)}`, headers["webhook-signature"], FOREIGN].join(" ");
    assert.equal(verifyWebhook(EVENT, headers, SECRET).id, "evt_01");
  });

  it("a changed or re-encoded body fails", () => {
    fails(EVENT.replace("7", "8"), signed(EVENT));
    fails(JSON.stringify(JSON.parse(EVENT), null, 1), signed(EVENT));
  });

  it("during a rotation either secret verifies; several secrets may be given", () => {
    const fresh = `whsec_${Buffer.alloc(32, "n").toString("base64")}`;
    const both = signed(EVENT);
    both["webhook-signature"] += ` ${signed(EVENT, fresh)["webhook-signature"]}`;
    assert.equal(verifyWebhook(EVENT, both, fresh).id, "evt_01");
    assert.equal(verifyWebhook(EVENT, signed(EVENT, fresh), [SECRET, fresh]).id, "evt_01");
    fails(EVENT, signed(EVENT, fresh), SECRET);
  });

  it("unpadded secrets verify; a secret that is not one is a TypeError", () => {
    for (const secret of ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr"]) {
      const padded = secret + "=".repeat((4 - (secret.length % 4)) % 4);
      assert.equal(verifyWebhook(EVENT, signed(EVENT, padded), `whsec_${secret}`).id, "evt_01");
    }
    for (const secret of ["", "whsec_", "   "]) {
      assert.throws(() => verifyWebhook(EVENT, signed(EVENT), secret), TypeError);
    }
  });

  it("a verified body that is not an event says so", () => {
    assert.throws(
      () => verifyWebhook(PAYLOAD, signed(PAYLOAD), SECRET),
      (e: WebhookVerificationError) => e.code === "invalid_event",
    );
  });
});

describe("verifyWebhook and the reference library", ownServer, () => {
  /** Run Python with the repository's venv (the one test/run.mjs serves with). */
  function python(code: string, input: string): string {
    const result = spawnSync(server!.cli[0] as string, ["-c", code], { input, encoding: "utf8", timeout: 30_000 });
    assert.equal(result.status, 0, result.stderr);
    return result.stdout.trim();
  }

  it("verifies what standardwebhooks signs, and standardwebhooks verifies ours", () => {
    const secret = `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString("base64")}`;
    const now = Math.floor(Date.now() / 1000);
    const theirs = python(
      [
        "import sys, datetime as dt, standardwebhooks",
        `w = standardwebhooks.Webhook(${JSON.stringify(secret)})`,
        `print(w.sign("${MSG_ID}", dt.datetime.fromtimestamp(${now}, dt.timezone.utc), sys.stdin.read()))`,
      ].join("\n"),
      EVENT,
    );
    const headers = { "webhook-id": MSG_ID, "webhook-timestamp": String(now), "webhook-signature": theirs };
    assert.equal(verifyWebhook(EVENT, headers, secret).id, "evt_01");
    const ours = webhookHeaders(secret, MSG_ID, now, EVENT);
    assert.equal(ours["webhook-signature"], theirs);
    const verified = python(
      [
        "import sys, json, standardwebhooks",
        `print(standardwebhooks.Webhook(${JSON.stringify(secret)}).verify(sys.stdin.read(), json.loads(${JSON.stringify(JSON.stringify(ours))}))["id"])`,
      ].join("\n"),
      EVENT,
    );
    assert.equal(verified, "evt_01");
  });
});

// client.exports against the live server: a snapshot downloaded whole into a folder, every
// file checked against its SHA-256; a key below Pro is told which plan has exports.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";

import { PlanLimitError, PropdataError } from "@propdata/client";

import { client, ownServer, server } from "./harness.js";

describe("exports", () => {
  it("downloads the newest snapshot with its checksums checked", ownServer, async () => {
    const c = client({ apiKey: server!.keys.pro });
    const [listed] = await c.exports.list();
    assert.ok(listed, "the test server made a snapshot");
    const folder = mkdtempSync(join(tmpdir(), "propdata-export-"));
    try {
      const snapshot = await c.exports.download(folder);
      assert.deepEqual(snapshot, listed);
      assert.equal(snapshot.rows, 42);
      for (const file of snapshot.files) {
        const bytes = readFileSync(join(folder, file.name));
        assert.equal(createHash("sha256").update(bytes).digest("hex"), file.sha256);
        assert.ok(!existsSync(join(folder, `${file.name}.part`)));
      }
      const manifest = JSON.parse(readFileSync(join(folder, "manifest.json"), "utf8"));
      assert.equal(manifest.feedCursor, snapshot.feedCursor);
      const missing = await c.exports.download(folder, "20991231T000000000Z-000000").catch((e: unknown) => e);
      assert.ok(missing instanceof PropdataError && missing.code === "not_found");
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("tells a Free key which plan has exports", ownServer, async () => {
    const refused = await client({ apiKey: server!.keys.free }).exports.list().catch((e: unknown) => e);
    assert.ok(refused instanceof PlanLimitError, String(refused));
    assert.equal(refused.status, 403);
    assert.match(refused.message, /Pro/);
  });
});

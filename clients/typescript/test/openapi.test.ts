// The SDK's declared types against the live server's /openapi.json: a field, parameter,
// enumeration value or operation added, removed or changed on either side fails here.
//
// The declarations are read from the built dist/types.d.ts (what a user's compiler sees)
// with the TypeScript compiler's parser.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, describe, it } from "node:test";

import ts from "typescript";

import { Client } from "@propdata/client";

import { baseUrl } from "./harness.js";

/** SDK interface → OpenAPI component schema (the same names unless listed). */
const MODELS: Record<string, string> = {
  Address: "Address",
  AuthStatus: "AuthStatus",
  ChangesMeta: "ChangesMeta",
  Comparable: "Comparable",
  Coordinates: "Coordinates",
  ErrorBody: "ErrorBody",
  Estimate: "Estimate",
  Export: "Manifest",
  ExportFile: "ExportFile",
  Limits: "Limits",
  Market: "Market",
  MarketHistory: "MarketHistory",
  MarketHistoryEntry: "HistoryEntry",
  MarketSnapshot: "Snapshot",
  PageMeta: "PageMeta",
  PriceEvent: "PriceEvent",
  Property: "PropertyDetail",
  PropertyChange: "PropertyChange",
  PropertyHistory: "PropertyHistory",
  PropertyMatch: "PropertyLookupItem",
  PropertySummary: "PropertySearchItem",
  Scores: "Scores",
  SearchMeta: "SearchMeta",
  ShortAddress: "ShortAddress",
  Candidate: "Candidate",
  CandidateAddress: "CandidateAddress",
  TaxRecord: "TaxRecord",
  Usage: "Usage",
  Valuation: "Valuation",
  WindowUsage: "WindowUsage",
};
const SCHEMA_TO_MODEL = Object.fromEntries(Object.entries(MODELS).map(([m, s]) => [s, m]));
/** Envelopes the client unwraps (`{data}`, `{meta, data}`, `{error}`), and /health. */
const UNMODELLED = new Set(["ErrorResponse", "Health"]);

/** SDK params interface → the operations whose query it is. */
const PARAMS: [string, string][] = [
  ["LookupParams", "lookupProperty"],
  ["PropertySearchParams", "searchProperties"],
  ["MarketSearchParams", "searchMarkets"],
  ["MarketHistoryParams", "getMarketHistory"],
  ["RecordParams", "getProperty"],
  ["RecordParams", "getPropertyHistory"],
  ["RecordParams", "getPropertyValuation"],
  ["ChangesParams", "listPropertyChanges"],
];
/** Page envelopes (`{meta, data}`) → the SDK's page interface and its meta, when not `Page`. */
const PAGES: Record<string, [string, string]> = {
  ChangesResponse: ["ChangesPage", "ChangesMeta"],
  SearchResponse: ["PropertyPage", "SearchMeta"],
};

/** Each operation → the SDK method that calls it (the alias path shares searchProperties). */
const OPERATIONS: Record<string, (c: Client) => unknown> = {
  getProperty: (c) => c.properties.get,
  lookupProperty: (c) => c.properties.lookup,
  searchProperties: (c) => c.properties.search,
  getPropertyHistory: (c) => c.properties.history,
  getPropertyValuation: (c) => c.properties.valuation,
  getMarket: (c) => c.markets.get,
  getMarketHistory: (c) => c.markets.history,
  searchMarkets: (c) => c.markets.search,
  getAuthStatus: (c) => c.auth.status,
  listPropertyChanges: (c) => c.properties.changes,
  listExports: (c) => c.exports.list,
  getExportFile: (c) => c.exports.download,
};
const NOT_IN_SDK = new Set(["getHealth", "searchPropertiesAlias", "streamEvents"]);

/**
 * The events surface, by method and path (path parameters as X) whatever the server names
 * its operations and schemas: the SDK interface of the answer's `data` (or of a page's
 * items), the page's meta when it is a page, the status of success, the SDK interfaces of
 * its query and body, and the method that calls it.
 */
interface EventOp {
  model: string | null;
  meta?: string;
  status: string;
  query?: string;
  body?: string;
  method: (c: Client) => unknown;
}
const EVENT_OPERATIONS: Record<string, EventOp> = {
  "post /v1/searches": { model: "SavedSearch", status: "201", body: "SearchCreateParams", method: (c) => c.searches.create },
  "get /v1/searches": { model: "SavedSearch", meta: "PageMeta", status: "200", query: "ListParams", method: (c) => c.searches.list },
  "get /v1/searches/X": { model: "SavedSearch", status: "200", method: (c) => c.searches.get },
  "patch /v1/searches/X": { model: "SavedSearch", status: "200", body: "SearchUpdateParams", method: (c) => c.searches.update },
  "delete /v1/searches/X": { model: null, status: "204", method: (c) => c.searches.delete },
  "get /v1/events": { model: "Event", meta: "EventsMeta", status: "200", query: "EventsParams", method: (c) => c.events.list },
  "get /v1/events/stream": { model: null, status: "200", method: (c) => c.events.stream },
  "post /v1/webhooks": { model: "CreatedWebhook", status: "201", body: "WebhookCreateParams", method: (c) => c.webhooks.create },
  "get /v1/webhooks": { model: "Webhook", meta: "PageMeta", status: "200", query: "ListParams", method: (c) => c.webhooks.list },
  "get /v1/webhooks/X": { model: "Webhook", status: "200", method: (c) => c.webhooks.get },
  "patch /v1/webhooks/X": { model: "Webhook", status: "200", body: "WebhookUpdateParams", method: (c) => c.webhooks.update },
  "delete /v1/webhooks/X": { model: null, status: "204", method: (c) => c.webhooks.delete },
  "post /v1/webhooks/X/rotate-secret": { model: null, status: "200", method: (c) => c.webhooks.rotateSecret },
  "post /v1/webhooks/X/test": { model: null, status: "202", method: (c) => c.webhooks.test },
  "get /v1/webhooks/X/deliveries": { model: "Delivery", meta: "PageMeta", status: "200", query: "ListParams", method: (c) => c.webhooks.deliveries },
  "post /v1/webhooks/X/deliveries/X/resend": { model: null, status: "202", method: (c) => c.webhooks.resend },
  "post /v1/webhooks/X/replay": { model: null, status: "202", method: (c) => c.webhooks.replay },
};
const EVENT_PATHS = ["/v1/searches", "/v1/events", "/v1/webhooks"];
const isEventPath = (path: string) => EVENT_PATHS.some((p) => path === p || path.startsWith(`${p}/`));

/** One field's shape, on either side, in the same terms. */
interface Shape {
  kind: string; // "string" | "number" | "boolean" | "array:<Model>" | "<Model>" | "object"
  nullable: boolean;
  required: boolean;
  values: string[] | null; // an enumeration, sorted; null when open
}

type Schema = Record<string, unknown> & {
  type?: string | string[];
  oneOf?: Schema[];
  $ref?: string;
  items?: Schema;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
};

interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: Schema;
}

// -- the OpenAPI side ----------------------------------------------------------------------

function schemaShape(schema: Schema, required: boolean): Shape {
  let nullable = false;
  const parts: Schema[] = [];
  for (const part of schema.oneOf ?? [schema]) {
    const types = Array.isArray(part.type) ? part.type : part.type ? [part.type] : [];
    if (types.includes("null")) nullable = true;
    const rest = types.filter((t) => t !== "null");
    if (rest.length || part.$ref || part.items) parts.push({ ...part, type: rest[0] });
  }
  assert.equal(parts.length, 1, `one non-null alternative in ${JSON.stringify(schema)}`);
  const part = parts[0] as Schema;
  const enumeration = (schema.enum ?? part.enum)?.filter((v) => v !== null).map(String).sort() ?? null;
  let kind: string;
  if (part.$ref) kind = model(part.$ref);
  else if (part.type === "array") kind = `array:${part.items?.$ref ? model(part.items.$ref) : part.items?.type}`;
  else if (part.type === "integer" || part.type === "number") kind = "number";
  else kind = String(part.type);
  return { kind, nullable, required, values: enumeration };
}

function model(ref: string): string {
  const name = ref.split("/").pop() ?? ref;
  return SCHEMA_TO_MODEL[name] ?? `unmapped schema ${name}`;
}

function schemaFields(schema: Schema): Record<string, Shape> {
  const required = new Set(schema.required ?? []);
  return Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([name, s]) => [name, schemaShape(s, required.has(name))]),
  );
}

// -- the SDK side --------------------------------------------------------------------------

const source = ts.createSourceFile(
  "types.d.ts",
  readFileSync(new URL("../dist/types.d.ts", import.meta.url), "utf8"),
  ts.ScriptTarget.Latest,
  true,
);
const interfaces = new Map<string, ts.InterfaceDeclaration>();
const aliases = new Map<string, ts.TypeAliasDeclaration>();
source.forEachChild((node) => {
  if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node);
  if (ts.isTypeAliasDeclaration(node)) aliases.set(node.name.text, node);
});

function typeShape(node: ts.TypeNode, required: boolean): Shape {
  const members = ts.isUnionTypeNode(node) ? [...node.types] : [node];
  let nullable = false;
  const literals: string[] = [];
  const kinds = new Set<string>();
  for (const member of members) {
    if (ts.isLiteralTypeNode(member) && member.literal.kind === ts.SyntaxKind.NullKeyword) {
      nullable = true;
    } else if (ts.isLiteralTypeNode(member) && ts.isStringLiteral(member.literal)) {
      literals.push(member.literal.text);
      kinds.add("string");
    } else if (ts.isTypeReferenceNode(member) && aliases.has(member.typeName.getText())) {
      const alias = typeShape((aliases.get(member.typeName.getText()) as ts.TypeAliasDeclaration).type, true);
      literals.push(...(alias.values ?? []));
      kinds.add(alias.kind);
    } else if (ts.isTypeReferenceNode(member)) {
      kinds.add(member.typeName.getText());
    } else if (ts.isArrayTypeNode(member)) {
      kinds.add(`array:${typeShape(member.elementType, true).kind}`);
    } else if (ts.isTypeOperatorNode(member) && ts.isArrayTypeNode(member.type)) {
      kinds.add(`array:${typeShape(member.type.elementType, true).kind}`); // readonly T[]
    } else if (member.kind === ts.SyntaxKind.StringKeyword) kinds.add("string");
    else if (member.kind === ts.SyntaxKind.NumberKeyword) kinds.add("number");
    else if (member.kind === ts.SyntaxKind.BooleanKeyword) kinds.add("boolean");
    else kinds.add(member.getText());
  }
  // `string | readonly string[]` (Fields, BoundingBox): a list is sent comma-joined, one
  // string on the wire
  if (kinds.size === 2 && kinds.has("string")) {
    for (const list of ["array:string", "array:number"]) kinds.delete(list);
  }
  assert.equal(kinds.size, 1, `one non-null type in ${node.getText()}`);
  return { kind: [...kinds][0] as string, nullable, required, values: literals.length ? literals.sort() : null };
}

function declaredFields(name: string): Record<string, Shape> {
  const declaration = interfaces.get(name);
  assert.ok(declaration, `dist/types.d.ts declares ${name}`);
  const fields: Record<string, Shape> = {};
  const collect = (node: ts.InterfaceDeclaration, omit: Set<string>) => {
    for (const clause of node.heritageClauses ?? []) {
      for (const base of clause.types) {
        // a plain `extends Other` of this file: Other's fields, then the node's own
        const parent = interfaces.get(base.expression.getText());
        assert.ok(parent && !base.typeArguments, `${name} extends ${base.getText()}: not compared`);
        collect(parent, omit);
      }
    }
    for (const member of node.members) {
      if (!ts.isPropertySignature(member) || !member.type) continue;
      const field = member.name.getText();
      if (!omit.has(field)) fields[field] = typeShape(member.type, !member.questionToken);
    }
  };
  collect(declaration, new Set());
  return fields;
}

/** Field by field, with the differences named (a plain deepEqual of two big maps is hard to read). */
function compare(
  what: string,
  declared: Record<string, Shape>,
  served: Record<string, Shape>,
  aspects: readonly (keyof Shape)[] = ["kind", "nullable", "required", "values"],
): void {
  const problems: string[] = [];
  for (const name of Object.keys(served)) {
    if (!(name in declared)) problems.push(`${what}.${name}: served, not declared`);
  }
  for (const [name, shape] of Object.entries(declared)) {
    const other = served[name];
    if (!other) {
      problems.push(`${what}.${name}: declared, not served`);
      continue;
    }
    for (const key of aspects) {
      if (JSON.stringify(shape[key]) !== JSON.stringify(other[key])) {
        problems.push(`${what}.${name}.${key}: declared ${JSON.stringify(shape[key])}, served ${JSON.stringify(other[key])}`);
      }
    }
  }
  assert.deepEqual(problems, []);
}

/** A schema with its `$ref` followed. */
function resolve(doc: Document, schema: Schema): Schema {
  return schema.$ref ? resolve(doc, doc.components.schemas[schema.$ref.split("/").pop() as string] as Schema) : schema;
}

/** The component schemas an events operation reaches (its answers and its body), deeply. */
function eventSchemas(doc: Document): Set<string> {
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== "object") return;
    const ref = (value as Schema).$ref;
    if (typeof ref === "string") {
      const name = ref.split("/").pop() as string;
      if (!found.has(name)) {
        found.add(name);
        walk(doc.components.schemas[name]);
      }
    }
    Object.values(value).forEach(walk);
  };
  for (const [path, methods] of Object.entries(doc.paths)) if (isEventPath(path)) walk(methods);
  for (const name of Object.values(MODELS)) found.delete(name); // shared (PageMeta, ...)
  return found;
}

/** Field names, required and nullable of a served schema against a declared interface; the
 * kind where the SDK declares a plain one (nested shapes are compared where they are models). */
function compareLoosely(what: string, declared: Record<string, Shape>, served: Record<string, Shape>): void {
  const plain = new Set(["string", "number", "boolean", "array:string", "array:number"]);
  const problems: string[] = [];
  for (const name of Object.keys(served)) if (!(name in declared)) problems.push(`${what}.${name}: served, not declared`);
  for (const [name, shape] of Object.entries(declared)) {
    const other = served[name];
    if (!other) {
      problems.push(`${what}.${name}: declared, not served`);
      continue;
    }
    const aspects: (keyof Shape)[] = ["nullable", "required", "values"];
    if (plain.has(shape.kind)) aspects.push("kind");
    for (const key of aspects) {
      if (JSON.stringify(shape[key]) !== JSON.stringify(other[key])) {
        problems.push(`${what}.${name}.${key}: declared ${JSON.stringify(shape[key])}, served ${JSON.stringify(other[key])}`);
      }
    }
  }
  assert.deepEqual(problems, []);
}

function eventOperations(doc: Document): Map<string, Operation> {
  const found = new Map<string, Operation>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (!isEventPath(path)) continue;
    for (const [method, op] of Object.entries(methods)) found.set(`${method} ${path.replace(/\{[^}]+\}/g, "X")}`, op);
  }
  return found;
}

// -- the tests -----------------------------------------------------------------------------

describe("the SDK's types match the live /openapi.json", () => {
  let doc: Document;
  let events: Set<string>;

  before(async () => {
    const answer = await fetch(`${baseUrl.replace(/\/+$/, "")}/openapi.json`);
    assert.equal(answer.status, 200);
    doc = (await answer.json()) as Document;
    events = eventSchemas(doc);
  });

  it("every component schema has an SDK interface, and back", () => {
    const schemas = Object.keys(doc.components.schemas).filter((name) => {
      const props = Object.keys(doc.components.schemas[name]?.properties ?? {});
      const envelope = name.endsWith("Response") && props.every((p) => p === "data" || p === "meta");
      return !envelope && !UNMODELLED.has(name) && !events.has(name);
    });
    assert.deepEqual(schemas.sort(), Object.values(MODELS).sort());
    for (const name of Object.keys(MODELS)) assert.ok(interfaces.has(name), `declares ${name}`);
  });

  it("every model's fields: names, types, required, nullable, enumerations", () => {
    for (const [name, schema] of Object.entries(MODELS)) {
      compare(name, declaredFields(name), schemaFields(doc.components.schemas[schema] as Schema));
    }
  });

  it("each envelope is what the client unwraps", () => {
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      if (!name.endsWith("Response") || UNMODELLED.has(name) || events.has(name)) continue;
      const props = Object.keys(schema.properties ?? {}).sort();
      assert.ok(
        JSON.stringify(props) === '["data"]' || JSON.stringify(props) === '["data","meta"]',
        `${name} is {data} or {meta, data}: ${props}`,
      );
      if (props.includes("meta")) {
        const [page, meta] = PAGES[name] ?? ["Page", "PageMeta"];
        assert.deepEqual(Object.keys(declaredFields(page)).sort(), props);
        assert.equal(schemaShape(schema.properties?.meta as Schema, true).kind, meta);
        if (page !== "Page" && page !== "PropertyPage") {
          // (a generic page's `data` is T[]: its items are PropertySummary, compared above)
          compare(page, declaredFields(page), schemaFields(schema));
        }
      }
    }
  });

  it("every query parameter of each operation: names, types, required, enumerations", () => {
    const operations = new Map<string, Parameter[]>();
    for (const methods of Object.values(doc.paths)) {
      for (const op of Object.values(methods)) operations.set(op.operationId, op.parameters ?? []);
    }
    for (const [name, operationId] of PARAMS) {
      const parameters = operations.get(operationId);
      assert.ok(parameters, `operation ${operationId}`);
      const served = Object.fromEntries(
        parameters.filter((p) => p.in === "query").map((p) => {
          const shape = schemaShape(p.schema, Boolean(p.required));
          return [p.name, shape];
        }),
      );
      // Not `nullable`: a query has no null (the client leaves null and undefined out).
      compare(name, declaredFields(name), served, ["kind", "required", "values"]);
    }
  });

  it("every operation has a client method", () => {
    const served = Object.entries(doc.paths)
      .filter(([path]) => !isEventPath(path))
      .flatMap(([, methods]) =>
        Object.entries(methods).map(([method, op]) => {
          assert.equal(method, "get", `${op.operationId} is a GET`);
          return op.operationId;
        }),
      );
    assert.deepEqual(
      served.filter((id) => !NOT_IN_SDK.has(id)).sort(),
      Object.keys(OPERATIONS).sort(),
    );
    const c = new Client();
    for (const [id, method] of Object.entries(OPERATIONS)) {
      assert.equal(typeof method(c), "function", `${id} has a method`);
    }
  });

  it("the events surface: every operation by method and path has a client method", () => {
    assert.deepEqual([...eventOperations(doc).keys()].sort(), Object.keys(EVENT_OPERATIONS).sort());
    const c = new Client();
    for (const [key, op] of Object.entries(EVENT_OPERATIONS)) {
      assert.equal(typeof op.method(c), "function", `${key} has a method`);
    }
  });

  it("the events answers: fields, required, nullable, enumerations", () => {
    const served = eventOperations(doc);
    for (const [key, expected] of Object.entries(EVENT_OPERATIONS)) {
      const op = served.get(key);
      assert.ok(op, `${key} is served`);
      assert.ok(expected.status in op.responses, `${key} answers ${expected.status}`);
      if (expected.model === null) continue;
      const body = resolve(doc, op.responses[expected.status]?.content?.["application/json"]?.schema as Schema);
      const data = body.properties?.data as Schema;
      assert.ok(data, `${key} answers {data}`);
      const item = expected.meta ? resolve(doc, data.items as Schema) : resolve(doc, data);
      compareLoosely(`${key} ${expected.model}`, declaredFields(expected.model), schemaFields(item));
      if (expected.meta) {
        const meta = resolve(doc, body.properties?.meta as Schema);
        compareLoosely(`${key} ${expected.meta}`, declaredFields(expected.meta), schemaFields(meta));
      }
    }
  });

  it("the events queries and bodies: names, required", () => {
    const served = eventOperations(doc);
    for (const [key, expected] of Object.entries(EVENT_OPERATIONS)) {
      const op = served.get(key);
      assert.ok(op, `${key} is served`);
      const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name).sort();
      const declared = expected.query ? Object.keys(declaredFields(expected.query)).sort() : [];
      if (key !== "get /v1/events/stream") assert.deepEqual(query, declared, `${key} query`);
      if (!expected.body) continue;
      const schema = op.requestBody?.content["application/json"]?.schema;
      assert.ok(schema, `${key} takes a JSON body`);
      const fields = schemaFields(resolve(doc, schema));
      const body = declaredFields(expected.body);
      assert.deepEqual(Object.keys(fields).sort(), Object.keys(body).sort(), `${key} body`);
      for (const [name, shape] of Object.entries(body)) {
        assert.equal(shape.required, fields[name]?.required, `${key} body ${name} required`);
      }
    }
  });

  it("catches a drift (the comparison is not vacuous)", () => {
    const schema = structuredClone(doc.components.schemas.PropertyLookupItem as Schema);
    (schema.properties as Record<string, Schema>).brandNew = { type: "string" };
    (schema.required as string[]).push("brandNew");
    assert.throws(() => compare("PropertyMatch", declaredFields("PropertyMatch"), schemaFields(schema)), /brandNew: served, not declared/);
    const nullable = structuredClone(doc.components.schemas.Coordinates as Schema);
    (nullable.properties as Record<string, Schema>).latitude = { oneOf: [{ type: "number" }, { type: "null" }] };
    assert.throws(() => compare("Coordinates", declaredFields("Coordinates"), schemaFields(nullable)), /latitude.nullable/);
  });
});

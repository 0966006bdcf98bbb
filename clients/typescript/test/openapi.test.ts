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
};
const NOT_IN_SDK = new Set(["getHealth", "searchPropertiesAlias", "streamEvents"]);

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

interface Document {
  paths: Record<string, Record<string, { operationId: string; parameters?: Parameter[] }>>;
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
      for (const base of clause.types) assert.fail(`${name} extends ${base.getText()}: not compared`);
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

// -- the tests -----------------------------------------------------------------------------

describe("the SDK's types match the live /openapi.json", () => {
  let doc: Document;

  before(async () => {
    const answer = await fetch(`${baseUrl.replace(/\/+$/, "")}/openapi.json`);
    assert.equal(answer.status, 200);
    doc = (await answer.json()) as Document;
  });

  it("every component schema has an SDK interface, and back", () => {
    const schemas = Object.keys(doc.components.schemas).filter((name) => {
      const props = Object.keys(doc.components.schemas[name]?.properties ?? {});
      const envelope = name.endsWith("Response") && props.every((p) => p === "data" || p === "meta");
      return !envelope && !UNMODELLED.has(name);
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
      if (!name.endsWith("Response") || UNMODELLED.has(name)) continue;
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
    const served = Object.values(doc.paths).flatMap((methods) =>
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

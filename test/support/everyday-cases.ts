/**
 * Ordinary requests, each one a 200 at the service's default settings: the README's examples
 * (regex, grammar, JSON Schema, the OpenAI route's schemas, a typed completion), twelve everyday
 * JSON schemas, a few ordinary regexes, small Lark grammars and a TypeScript interface, each with
 * the max tokens its endpoint would use. test/verdicts-under-load.test.ts asks for them on an idle
 * and on a loaded machine and requires the same verdicts.
 */

/** What a constraint is, as the service's routes hand it to the constraint cache. */
export type EverydayConstraint =
  | { readonly kind: "regex"; readonly pattern: string }
  | { readonly kind: "grammar"; readonly grammar: string }
  | { readonly kind: "json_schema"; readonly schema: unknown }
  | { readonly kind: "typescript"; readonly source: string; readonly typeName: string };

export interface EverydayCase {
  readonly name: string;
  readonly constraint: EverydayConstraint;
  /** The request's max_new_tokens / max_tokens (the endpoint's default where the example leaves it out). */
  readonly maxTokens: number;
}

/** What the JSON routes pass when the request says nothing of them (src/server/schemas.ts). */
export const DEFAULT_JSON_OPTIONS = { whitespace: "default", forbidUnnamedProperties: false, strict: true } as const;

/** Defaults of the endpoints: /v1/completion/json and /typed (256), chat (what is left of TRELLIS_MAX_NEW_TOKENS: 512). */
const JSON_MAX = 256;
const CHAT_MAX = 512;

/** Schemas a product team writes every day: flat records, enums, nullable fields, formats, recursion, decimals. */
export const EVERYDAY_SCHEMAS: Readonly<Record<string, unknown>> = {
  person: {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 40 },
      age: { type: "integer", minimum: 0, maximum: 150 },
      email: { type: "string", format: "email" },
    },
    required: ["name", "age", "email"],
  },
  ticket: {
    type: "object",
    properties: {
      title: { type: "string" },
      priority: { enum: ["low", "medium", "high"] },
      tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      assignee: {
        anyOf: [
          { type: "object", properties: { id: { type: "integer" }, name: { type: "string" } }, required: ["id", "name"] },
          { type: "null" },
        ],
      },
      estimate: { type: ["integer", "null"] },
      status: { anyOf: [{ const: "open" }, { const: "closed" }] },
      done: { type: "boolean" },
    },
    required: ["title", "priority", "tags", "assignee", "estimate", "status", "done"],
  },
  tree: {
    $defs: {
      node: {
        type: "object",
        properties: { value: { type: "integer" }, children: { type: "array", items: { $ref: "#/$defs/node" } } },
        required: ["value", "children"],
      },
    },
    $ref: "#/$defs/node",
  },
  invoice: {
    type: "object",
    properties: {
      id: { type: "string" },
      lines: {
        type: "array",
        items: {
          type: "object",
          properties: { item: { type: "string" }, qty: { type: "integer", minimum: 1 }, price: { type: "number", multipleOf: 0.01 } },
          required: ["item", "qty", "price"],
        },
      },
      total: { type: "number", multipleOf: 0.01 },
    },
    required: ["id", "lines", "total"],
  },
  meta: { type: "object", properties: { id: { type: "integer" }, meta: { type: "object" } }, required: ["id", "meta"] },
  simple: { type: "object", properties: { q: { type: "integer" } } },
  list: { type: "array", items: { type: "string" } },
  answer: {
    type: "object",
    properties: { answer: { type: "string" }, confidence: { type: "number", minimum: 0, maximum: 1 } },
    required: ["answer", "confidence"],
  },
  dates: {
    type: "object",
    properties: { start: { type: "string", format: "date" }, end: { type: "string", format: "date-time" } },
    required: ["start", "end"],
  },
  uuid: {
    type: "object",
    properties: { id: { type: "string", format: "uuid" }, uri: { type: "string", format: "uri" } },
    required: ["id"],
  },
  address: {
    type: "object",
    properties: {
      street: { type: "string" },
      city: { type: "string" },
      zip: { type: "string", pattern: "^[0-9]{5}$" },
      country: { type: "string", minLength: 2, maxLength: 2 },
    },
    required: ["street", "city", "zip", "country"],
  },
  sentiment: {
    type: "object",
    properties: { sentiment: { enum: ["positive", "negative", "neutral"] }, score: { type: "number" } },
    required: ["sentiment", "score"],
    additionalProperties: false,
  },
};

/** A Lark grammar of JSON values (Lark's own tutorial grammar, whitespace ignored). */
const JSONISH_GRAMMAR = `?start: value
?value: object | array | ESCAPED_STRING | SIGNED_NUMBER | "true" | "false" | "null"
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: ESCAPED_STRING ":" value
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
`;
const ARITHMETIC_GRAMMAR = `start: sum
?sum: product | sum "+" product | sum "-" product
?product: atom | product "*" atom | product "/" atom
?atom: NUMBER | "(" sum ")"
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
`;
const PALINDROME_GRAMMAR = `start: pal\npal: "a" pal "a" | "b" pal "b" | MID\nMID: "a".."z"\n`;

export const EVERYDAY_CASES: readonly EverydayCase[] = [
  // README, "API": each endpoint's example as it is sent.
  { name: "README regex: the year the Berlin wall fell", constraint: { kind: "regex", pattern: "(19|20)[0-9]{2}" }, maxTokens: 5 },
  {
    name: "README cfg: a list of two colors",
    constraint: { kind: "grammar", grammar: 'start: "[" COLOR ", " COLOR "]"\nCOLOR: "red" | "green" | "blue"' },
    maxTokens: 12,
  },
  {
    name: "README json: a user",
    constraint: {
      kind: "json_schema",
      schema: {
        type: "object",
        properties: { name: { type: "string", maxLength: 20 }, age: { type: "integer", minimum: 0 } },
        required: ["name", "age"],
        additionalProperties: false,
      },
    },
    maxTokens: JSON_MAX,
  },
  {
    name: "README chat: response_format pet",
    constraint: {
      kind: "json_schema",
      schema: { type: "object", properties: { name: { type: "string" }, legs: { type: "integer" } }, required: ["name", "legs"] },
    },
    maxTokens: CHAT_MAX,
  },
  {
    // What openai's zodResponseFormat sends for z.object({ name: z.string(), legs: z.number().int() }).
    name: "README chat: zodResponseFormat pet",
    constraint: {
      kind: "json_schema",
      schema: {
        type: "object",
        properties: { name: { type: "string" }, legs: { type: "integer" } },
        required: ["name", "legs"],
        additionalProperties: false,
        $schema: "http://json-schema.org/draft-07/schema#",
      },
    },
    maxTokens: CHAT_MAX,
  },
  {
    // The README shows the typed endpoint's answer ({"text": "hello"}); this is the type behind it.
    name: "README typed: a Message",
    constraint: { kind: "typescript", source: "export type Message = { text: string; }", typeName: "Message" },
    maxTokens: JSON_MAX,
  },
  ...Object.entries(EVERYDAY_SCHEMAS).map(
    ([name, schema]): EverydayCase => ({ name: `json ${name}`, constraint: { kind: "json_schema", schema }, maxTokens: JSON_MAX }),
  ),
  { name: "regex email-like", constraint: { kind: "regex", pattern: "[a-z]{2,8}@[a-z]{2,8}\\.com" }, maxTokens: 64 },
  { name: "regex date", constraint: { kind: "regex", pattern: "\\d{4}-\\d{2}-\\d{2}" }, maxTokens: 64 },
  { name: "regex yes/no", constraint: { kind: "regex", pattern: "(yes|no)" }, maxTokens: 64 },
  { name: "grammar arithmetic", constraint: { kind: "grammar", grammar: ARITHMETIC_GRAMMAR }, maxTokens: 64 },
  { name: "grammar JSON-ish", constraint: { kind: "grammar", grammar: JSONISH_GRAMMAR }, maxTokens: 64 },
  { name: "grammar palindrome", constraint: { kind: "grammar", grammar: PALINDROME_GRAMMAR }, maxTokens: 64 },
  {
    name: "typescript Person",
    constraint: { kind: "typescript", source: "export interface Person { name: string; age: number; tags: string[] }", typeName: "Person" },
    maxTokens: 64,
  },
];

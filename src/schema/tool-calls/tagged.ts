/**
 * Tool calls whose arguments are tagged parameters (arguments.ts reads which, and how each
 * value is written), as the templates write them in an assistant turn's history:
 * - "xml-function" (Qwen3-Coder, Qwen3.5, Nemotron 3, Step 3.5):
 *   `<tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>`;
 *   a string value raw (without "\n</parameter>"), others JSON (`True`/`False`/`None` as well,
 *   which `value | string` writes);
 * - "glm" (GLM-4.6+, Ling, Laguna, Spark): `<tool_call>f<arg_key>p</arg_key><arg_value>value</arg_value></tool_call>`,
 *   with or without a newline before each tag (the family's templates differ) and up to two before
 *   the closing one; a string value raw (without "</arg_value>"), others JSON;
 * - "seed-oss" (Seed-OSS): `<seed:tool_call>\n<function=f>\n<parameter=p>value</parameter>\n</function>\n</seed:tool_call>`;
 *   a string raw (without "</parameter>"), numbers, booleans and null as Python's str writes them
 *   (JSON's spellings as well); objects and arrays as Python's str writes them (python-literal.ts);
 * - "minimax-m2" (MiniMax-M2): one block `<minimax:tool_call>\n<invoke name="f">\n<parameter name="p">value</parameter>\n</invoke>\n</minimax:tool_call>`
 *   holding every call (one `<invoke>` after another); a string raw (without "</parameter>"), others JSON;
 * - "minimax-m3" (MiniMax-M3): one block `N<tool_call>\nN<invoke name="f">N<p>valueN</p>N</invoke>\nN</tool_call>`,
 *   N the namespace token `]<]minimax[>[`; a string raw (without N), numbers and booleans as
 *   JSON; a null argument is left out; objects and arrays as nested elements (minimax-xml.ts);
 * - "deepseek-dsml" (DeepSeek-V3.2) and "deepseek-v4" (DeepSeek-V4): one block
 *   `<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="p" string="true">value</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>`
 *   (V4: `tool_calls`, and a newline more in a call without arguments), the `string` attribute saying how the value reads: "true" a raw string,
 *   "false" JSON of any other type (so a string is never told apart by its text here);
 * - "minicpm5" (MiniCPM5): `<function name="f"><param name="p">value</param></function>` per call; a
 *   string bare (without "<", "&" or a newline) or in `<![CDATA[…]]>`, others as Python's str writes
 *   them (objects and arrays too, Python's literals);
 * - "kimi-k3" (Kimi-K3, XTML): one block `<|open|>tools<|sep|>` of calls
 *   `<|open|>call tool="f" index="1"<|sep|><|open|>argument key="p" type="string"<|sep|>value<|close|>argument<|sep|>…<|close|>call<|sep|>`
 *   closed by `<|close|>tools<|sep|>` (`<|open|>`, `<|close|>`, `<|sep|>` control tokens), the
 *   `type` attribute naming the value's JSON type: "string" before a raw string, "number",
 *   "boolean", "null", "object", "array" before JSON of that type; it follows the reply's text and
 *   its close (kimiK3ReplyLanguage);
 * - "muse" (Muse): one call per message, ` to=f<|message|><atem:function_calls>\n<atem:invoke name="f">\n<atem:parameter name="p">value</atem:parameter>\n…`
 *   (muse.ts writes the reply around them); a string raw (without "</atem:parameter>"), others JSON;
 * - "hunyuan" (Hunyuan 3): one block `<tool_calls:opensource>\n<tool_call:opensource>f<tool_sep:opensource>\n<arg_key:opensource>p</arg_key:opensource>\n<arg_value:opensource>value</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>`
 *   (GLM's tags, namespaced); a string raw (without "</arg_value:opensource>"), others JSON.
 * The calls of the per-call block styles follow one another with or without a newline between,
 * and one newline may end the reply.
 */
import {
  compileRegex,
  compileRegexNode,
  ecmaSearchNode,
  intersectDfas,
  isEmptyLanguage,
  matchesString,
  pyReEscape,
  subtractDfas,
  type ByteDfa,
  type RegexLimits,
  type RegexNode,
} from "../../regex/index.js";
import { compileJsonSchema, type JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaError, JsonSchemaUnsatisfiableError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { formatNode } from "../json-schema/formats.js";
import { isObject } from "../json-schema/spec.js";
import {
  type ArgumentStyle,
  type FunctionForm,
  functionForm,
  type ParameterForm,
  reservedPattern,
  type StringBranch,
  type TaggedToolCallStyle,
  VALUE_RULES,
  valueJson,
} from "./arguments.js";
import { textWithout } from "./text.js";
import { pythonLiteralLanguage } from "./python-literal.js";
import { MiniMaxXmlValues, readMiniMaxXml } from "./minimax-xml.js";
import { markerNode } from "../marker-node.js";
import { CONTROL_MARKERS } from "../../support/index.js";
import { literal } from "./nodes.js";

/** MiniMax-M3's namespace token, before each of its tags. */
export const MINIMAX_NS = "]<]minimax[>[";

/**
 * A piece of a layout: literal text (control markers in it written as their tokens), the
 * function's or parameter's name, a call's number (Kimi-K3's `index`, any positive decimal), or
 * up to `newlines` optional newlines.
 */
type Piece = string | typeof NAME | typeof INDEX | { readonly newlines: number };
const NAME = Symbol("name");
const INDEX = Symbol("index");
const newlines = (n: number): Piece => ({ newlines: n });

/** Where a tagged style puts the names and values of its calls. */
interface TaggedLayout {
  /** The marker that opens the calls (free text never spells it). */
  readonly open: string;
  /** One block around all the calls (its opening starts with `open`), or null: each call is a block of its own, starting with `open`. */
  readonly block: { readonly open: string; readonly close: string } | null;
  readonly callOpen: readonly Piece[];
  readonly paramOpen: readonly Piece[];
  /** After a value, for the parameter named (starts with `rawStop`). */
  readonly paramClose: readonly Piece[];
  readonly callClose: readonly Piece[];
  /** What a raw string never holds: the value ends at its first occurrence. */
  readonly rawStop: string;
  /**
   * The value's kind said before it (DSML's `string="true">` / `string="false">`, Kimi-K3's
   * `string"<|sep|>` / `number"<|sep|>`…, after paramOpen): then a raw string and JSON are told
   * apart by it, not by the value's text.
   */
  readonly typed?: TypedValues;
  /**
   * A string may also be written in a CDATA section (MiniCPM5: `<![CDATA[…]]>`, any text without
   * its close); then a string written bare holds none of `bareExcludes` (a character class).
   */
  readonly cdata?: CdataRule;
}

/** What is said before a raw string, and before JSON: one word for every type (`json`), or one per type (`byType`). */
interface TypedValues {
  readonly raw: string;
  readonly json?: string;
  readonly byType?: Readonly<Record<(typeof JSON_KINDS)[number], string>>;
}

/** Kimi-K3's type names for the values that are not strings (xtml_type: every number is "number"). */
const JSON_KINDS = ["null", "boolean", "number", "object", "array"] as const;
/** The JSON texts of each kind, by their first characters (a value's text is one JSON value). */
const KIND_PATTERNS: Record<(typeof JSON_KINDS)[number], string> = {
  null: "null",
  boolean: "true|false",
  number: "[-0-9].*",
  object: "\\{.*",
  array: "\\[.*",
};

interface CdataRule {
  readonly open: string;
  readonly close: string;
  readonly bareExcludes: string;
}

const DSML = "｜DSML｜";
/** Hunyuan 3's suffix in each of its tags' names. */
const HY = ":opensource";
/**
 * DeepSeek's DSML layout, its block named `block` (V3.2 function_calls, V4 tool_calls); V4 writes
 * a newline more in a call without arguments (`emptyNewline`).
 */
const dsmlLayout = (block: string, emptyNewline: boolean): TaggedLayout => ({
  open: `<${DSML}${block}>`,
  block: { open: `<${DSML}${block}>\n`, close: `</${DSML}${block}>` },
  callOpen: [`<${DSML}invoke name="`, NAME, '">\n'],
  paramOpen: [`<${DSML}parameter name="`, NAME, '" string="'],
  paramClose: [`</${DSML}parameter>\n`],
  callClose: emptyNewline ? [newlines(1), `</${DSML}invoke>\n`] : [`</${DSML}invoke>\n`],
  rawStop: `</${DSML}parameter>`,
  typed: { raw: 'true">', json: 'false">' },
});

/** Kimi-K3's XTML tags (control tokens), and the markers that end its reply's text and its message. */
const XTML_OPEN = "<|open|>";
const XTML_CLOSE = "<|close|>";
const XTML_SEP = "<|sep|>";
export const KIMI_K3_MARKERS: readonly string[] = [XTML_OPEN, XTML_CLOSE, XTML_SEP];
/** The end of the reply's text (the calls, if any, come after it). */
export const KIMI_K3_RESPONSE_CLOSE = `${XTML_CLOSE}response${XTML_SEP}`;
const KIMI_K3_MESSAGE_CLOSE = `${XTML_CLOSE}message${XTML_SEP}`;
const xtmlTyped = (type: string): string => `${type}"${XTML_SEP}`;

export const TAGGED_LAYOUTS: Record<TaggedToolCallStyle, TaggedLayout> = {
  "xml-function": {
    open: "<tool_call>",
    block: null,
    callOpen: ["<tool_call>\n<function=", NAME, ">\n"],
    paramOpen: ["<parameter=", NAME, ">\n"],
    paramClose: ["\n</parameter>\n"],
    callClose: ["</function>\n</tool_call>"],
    rawStop: "\n</parameter>",
  },
  glm: {
    open: "<tool_call>",
    block: null,
    callOpen: ["<tool_call>", NAME],
    paramOpen: [newlines(1), "<arg_key>", NAME, "</arg_key>", newlines(1), "<arg_value>"],
    paramClose: ["</arg_value>"],
    callClose: [newlines(2), "</tool_call>"],
    rawStop: "</arg_value>",
  },
  "seed-oss": {
    open: "<seed:tool_call>",
    block: null,
    callOpen: ["<seed:tool_call>\n<function=", NAME, ">\n"],
    paramOpen: ["<parameter=", NAME, ">"],
    paramClose: ["</parameter>\n"],
    callClose: ["</function>\n</seed:tool_call>"],
    rawStop: "</parameter>",
  },
  "minimax-m2": {
    open: "<minimax:tool_call>",
    block: { open: "<minimax:tool_call>\n", close: "</minimax:tool_call>" },
    callOpen: ['<invoke name="', NAME, '">\n'],
    paramOpen: ['<parameter name="', NAME, '">'],
    paramClose: ["</parameter>\n"],
    callClose: ["</invoke>\n"],
    rawStop: "</parameter>",
  },
  "minimax-m3": {
    open: `${MINIMAX_NS}<tool_call>`,
    block: { open: `${MINIMAX_NS}<tool_call>\n`, close: `${MINIMAX_NS}</tool_call>` },
    callOpen: [`${MINIMAX_NS}<invoke name="`, NAME, '">'],
    paramOpen: [`${MINIMAX_NS}<`, NAME, ">"],
    paramClose: [`${MINIMAX_NS}</`, NAME, ">"],
    callClose: [`${MINIMAX_NS}</invoke>\n`],
    rawStop: MINIMAX_NS,
  },
  "deepseek-dsml": dsmlLayout("function_calls", false),
  "deepseek-v4": dsmlLayout("tool_calls", true),
  minicpm5: {
    open: '<function name="',
    block: null,
    callOpen: ['<function name="', NAME, '">'],
    paramOpen: ['<param name="', NAME, '">'],
    paramClose: ["</param>"],
    callClose: ["</function>"],
    rawStop: "</param>",
    cdata: { open: "<![CDATA[", close: "]]>", bareExcludes: "[<&\n]" },
  },
  // Muse's ATEM call, one per message (muse.ts joins the messages and writes the text's).
  muse: {
    open: "to=",
    block: null,
    callOpen: ["to=", NAME, '<|message|><atem:function_calls>\n<atem:invoke name="', NAME, '">\n'],
    paramOpen: ['<atem:parameter name="', NAME, '">'],
    paramClose: ["</atem:parameter>\n"],
    callClose: ["</atem:invoke>\n</atem:function_calls>"],
    rawStop: "</atem:parameter>",
  },
  "kimi-k3": {
    open: `${XTML_OPEN}tools${XTML_SEP}`,
    block: { open: `${XTML_OPEN}tools${XTML_SEP}`, close: `${XTML_CLOSE}tools${XTML_SEP}` },
    callOpen: [`${XTML_OPEN}call tool="`, NAME, '" index="', INDEX, `"${XTML_SEP}`],
    paramOpen: [`${XTML_OPEN}argument key="`, NAME, '" type="'],
    paramClose: [`${XTML_CLOSE}argument${XTML_SEP}`],
    callClose: [`${XTML_CLOSE}call${XTML_SEP}`],
    rawStop: XTML_CLOSE,
    typed: {
      raw: xtmlTyped("string"),
      byType: {
        null: xtmlTyped("null"),
        boolean: xtmlTyped("boolean"),
        number: xtmlTyped("number"),
        object: xtmlTyped("object"),
        array: xtmlTyped("array"),
      },
    },
  },
  hunyuan: {
    open: `<tool_calls${HY}>`,
    block: { open: `<tool_calls${HY}>\n`, close: `</tool_calls${HY}>` },
    callOpen: [`<tool_call${HY}>`, NAME, `<tool_sep${HY}>\n`],
    paramOpen: [`<arg_key${HY}>`, NAME, `</arg_key${HY}>\n<arg_value${HY}>`],
    paramClose: [`</arg_value${HY}>\n`],
    callClose: [`</tool_call${HY}>\n`],
    rawStop: `</arg_value${HY}>`,
  },
};
/** Longest string whose characters are counted (a longer maxLength is written as this), as the JSON Schema front end does. */
const MAX_COUNTED_LENGTH = 256;

const ofDfa = (dfa: ByteDfa): RegexNode => ({ kind: "dfa", dfa });
const optional = (item: RegexNode, max = 1): RegexNode => ({ kind: "repeat", item, min: 0, max });
const NEWLINE = literal("\n");
/** JSON's literals and Python's str of them, which some templates write. */
const PYTHON_SPELLINGS = [
  ["true", "True"],
  ["false", "False"],
  ["null", "None"],
] as const;

/** One call of one of `tools` in `style` (parameters in order, required ones present), and the warnings of their schemas. */
export function taggedCallLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  style: TaggedToolCallStyle,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { call: RegexNode; warnings: JsonSchemaWarning[] } {
  const layout = TAGGED_LAYOUTS[style];
  const compiler = new ValueCompiler(style, options, layout.rawStop, layout.cdata);
  const calls = tools.map((tool) => {
    const fn = functionForm(tool, style);
    const params = fn.parameters.flatMap((p): RegexNode[] => {
      const value = layout.typed ? compiler.typedValue(fn, p, layout.typed) : compiler.value(fn, p);
      if (value === null) {
        // No value can be written: a required parameter would leave the function uncallable (422).
        if (p.required) throw new JsonSchemaUnsatisfiableError(`${p.pointer} (function ${JSON.stringify(fn.name)})`);
        return [];
      }
      const tagged: RegexNode = {
        kind: "concat",
        items: [...pieces(layout.paramOpen, p.name), ofDfa(value), ...pieces(layout.paramClose, p.name)],
      };
      return [p.required ? tagged : optional(tagged)];
    });
    return { kind: "concat", items: [...pieces(layout.callOpen, fn.name), ...params, ...pieces(layout.callClose, fn.name)] } as RegexNode;
  });
  return { call: calls.length === 1 ? calls[0]! : { kind: "alt", items: calls }, warnings: compiler.warnings };
}

/** A layout's pieces as a language, `name` in the name's place. */
function pieces(layout: readonly Piece[], name: string): RegexNode[] {
  return layout.map((piece) =>
    piece === NAME
      ? literal(name)
      : piece === INDEX
        ? ofDfa(compileRegex("[1-9][0-9]*"))
        : typeof piece === "string"
          ? spelled(piece)
          : optional(NEWLINE, piece.newlines),
  );
}

/** Text whose control markers (Kimi-K3's `<|open|>`…) are written as their tokens, the rest as text. */
export function spelled(text: string): RegexNode {
  const items: RegexNode[] = [];
  let plain = "";
  for (let at = 0; at < text.length; ) {
    const marker = text[at] === "<" || text[at] === "[" ? CONTROL_MARKERS.find((m) => text.startsWith(m, at)) : undefined;
    if (marker === undefined) {
      plain += text[at++];
      continue;
    }
    if (plain.length > 0) items.push(literal(plain));
    items.push(markerNode(marker));
    plain = "";
    at += marker.length;
  }
  if (plain.length > 0) items.push(literal(plain));
  return items.length === 1 ? items[0]! : { kind: "concat", items };
}

/**
 * Kimi-K3's reply after the generation prompt's `<|open|>response<|sep|>` (or the reasoning's
 * close, which ends with it): text without the XTML tags, then (or the generation ends there) the
 * response's close, the block of calls or none, and the message's close or none.
 */
export function kimiK3ReplyLanguage(callsBlock: RegexNode, limits: RegexLimits): RegexNode {
  const text = ofDfa(textWithout(KIMI_K3_MARKERS, limits));
  const rest: RegexNode = {
    kind: "concat",
    items: [spelled(KIMI_K3_RESPONSE_CLOSE), optional(callsBlock), optional(spelled(KIMI_K3_MESSAGE_CLOSE))],
  };
  return { kind: "concat", items: [text, optional(rest)] };
}

/** A reply of kimiK3ReplyLanguage: its text (null when empty and calls follow) and its calls. */
export function parseKimiK3Reply(
  text: string,
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
): { content: string | null; calls: { name: string; arguments: string }[] } {
  const at = text.indexOf(KIMI_K3_RESPONSE_CLOSE);
  if (at < 0) return { content: text, calls: [] };
  let rest = text.slice(at + KIMI_K3_RESPONSE_CLOSE.length);
  if (rest.endsWith(KIMI_K3_MESSAGE_CLOSE)) rest = rest.slice(0, rest.length - KIMI_K3_MESSAGE_CLOSE.length);
  const calls = rest.length === 0 ? [] : parseTaggedCalls(rest, "kimi-k3", tools);
  const content = text.slice(0, at);
  return { content: calls.length > 0 && content.trim().length === 0 ? null : content, calls };
}

/** The languages of parameter values, with what the JSON Schema front end says of their schemas. */
export class ValueCompiler {
  readonly warnings: JsonSchemaWarning[] = [];
  private readonly limits: RegexLimits;
  private rawText: ByteDfa | null = null;
  private readonly reserved = new Map<string, ByteDfa>();
  /** Raw text between each quote quotedValue was asked for. */
  private readonly quoted = new Map<string, ByteDfa>();

  constructor(
    private readonly style: ArgumentStyle,
    private readonly options: JsonSchemaOptions & { limits?: RegexLimits },
    /** What ends a raw string (it never holds it). */
    private readonly rawStop: string,
    private readonly cdata?: CdataRule,
  ) {
    this.limits = options.limits ?? {};
  }

  /**
   * A value whose strings are quoted with any of `quotes` (raw text between two of the same quote:
   * LFM2's ' or "), so that a string and the other types' values are told apart by the quote, not
   * by their text (null: none can be written).
   */
  quotedValue(fn: FunctionForm, p: ParameterForm, quotes: readonly string[]): ByteDfa | null {
    const items: RegexNode[] = [];
    for (const quote of quotes) {
      let inside = this.quoted.get(quote);
      if (inside === undefined) this.quoted.set(quote, (inside = textWithout([quote], this.limits)));
      for (const branch of p.strings) {
        const raw = this.rawString(fn, p, branch, inside);
        if (raw !== null) items.push({ kind: "concat", items: [literal(quote), ofDfa(raw), literal(quote)] });
      }
    }
    const json = this.jsonLanguage(fn, p);
    if (json !== null) {
      const choices: RegexNode[] = [ofDfa(json)];
      for (const [text, python] of PYTHON_SPELLINGS) if (matchesString(json, text)) choices.push(literal(python));
      items.push({ kind: "alt", items: choices });
    }
    return items.length === 0 ? null : this.compile(items.length === 1 ? items[0]! : { kind: "alt", items });
  }

  /**
   * A parameter's values that are not strings, as JSON texts (null: none), and where the style's
   * template writes objects and arrays as Python's str does, as those literals too.
   */
  private jsonLanguage(fn: FunctionForm, p: ParameterForm): ByteDfa | null {
    const json = p.jsonSchema === null ? null : this.schemaLanguage(fn, p, p.jsonSchema, p.jsonPointer);
    const rules = VALUE_RULES[this.style];
    if (json === null || !rules.pythonLiterals) return json;
    // The values the template writes with Python's str: objects and arrays (LFM2: arrays only; its
    // objects are JSON), what they hold included. Scalars stay JSON (beside Python's spellings).
    const written = this.reservedDfa(rules.objectsAsJson ? "\\[.*" : "[\\[{].*");
    const structured = intersectDfas(json, written, this.limits);
    if (isEmptyLanguage(structured)) return json;
    const rest = subtractDfas(json, written, this.limits);
    return this.compile({ kind: "alt", items: [ofDfa(rest), ofDfa(pythonLiteralLanguage(structured, this.limits))] });
  }

  /**
   * A value after its kind (`typed.raw` then a raw string, or `typed.json` then JSON of the other
   * types): the kind tells them apart, so neither is narrowed by the other (null: none can be written).
   */
  typedValue(fn: FunctionForm, p: ParameterForm, typed: TypedValues): ByteDfa | null {
    const items: RegexNode[] = [];
    const raw = p.strings.map((b) => this.rawString(fn, p, b)).filter((d): d is ByteDfa => d !== null);
    if (raw.length > 0) items.push({ kind: "concat", items: [spelled(typed.raw), { kind: "alt", items: raw.map(ofDfa) }] });
    const json = p.jsonSchema === null ? null : this.schemaLanguage(fn, p, p.jsonSchema, p.jsonPointer);
    if (json !== null) {
      const written = subtractDfas(json, this.containsClose(), this.limits);
      if (typed.byType !== undefined) {
        // Each kind's JSON after its own word.
        for (const kind of JSON_KINDS) {
          const ofKind = intersectDfas(written, this.reservedDfa(KIND_PATTERNS[kind]), this.limits);
          if (!isEmptyLanguage(ofKind)) items.push({ kind: "concat", items: [spelled(typed.byType[kind]), ofDfa(ofKind)] });
        }
      } else if (!isEmptyLanguage(written)) items.push({ kind: "concat", items: [spelled(typed.json!), ofDfa(written)] });
    }
    return items.length === 0 ? null : this.compile(items.length === 1 ? items[0]! : { kind: "alt", items });
  }

  /** The texts of a parameter's value (null: none can be written). */
  value(fn: FunctionForm, p: ParameterForm): ByteDfa | null {
    if (VALUE_RULES[this.style].xmlStructured && p.jsonTypes.some((t) => t === "object" || t === "array")) {
      // MiniMax-M3's nested elements (such a value is never a string too: arguments.ts).
      const node = new MiniMaxXmlValues(this, fn, p).top();
      return node === null ? null : this.compile(node);
    }
    const items: RegexNode[] = [];
    const reserved = reservedPattern(this.style, p.jsonTypes);
    if (p.strings.length > 0) {
      const bare = this.cdata ? this.reservedDfa(`[^${this.cdata.bareExcludes.slice(1, -1)}]*`) : this.rawTextDfa();
      const branches = p.strings.map((b) => this.rawString(fn, p, b, bare)).filter((d): d is ByteDfa => d !== null);
      if (branches.length > 0) {
        let raw = branches.length === 1 ? branches[0]! : this.compile({ kind: "alt", items: branches.map(ofDfa) });
        // A string that reads as one of the other types' JSON is that value, so it is not written raw.
        if (reserved !== null) raw = subtractDfas(raw, this.reservedDfa(reserved), this.limits);
        if (!isEmptyLanguage(raw)) items.push(ofDfa(raw));
      }
      if (this.cdata) {
        // In a CDATA section: any text without its close (the section tells a string apart).
        const { open, close } = this.cdata;
        const inside = subtractDfas(this.reservedDfa(".*"), this.reservedDfa(`.*${pyReEscape(close)}.*`), this.limits);
        for (const b of p.strings) {
          const text = this.rawString(fn, p, b, inside);
          if (text !== null) items.push({ kind: "concat", items: [literal(open), ofDfa(text), literal(close)] });
        }
      }
    }
    if (p.jsonSchema !== null) {
      let json = this.jsonLanguage(fn, p);
      if (json !== null) {
        // The reading rule (valueJson) by construction: JSON beside raw strings is a reserved text.
        if (p.strings.length > 0 && reserved !== null) json = intersectDfas(json, this.reservedDfa(reserved), this.limits);
        const choices: RegexNode[] = [ofDfa(json)];
        if (VALUE_RULES[this.style].python) {
          // What the template writes for these values (`value | string`, Python's str).
          for (const [text, python] of PYTHON_SPELLINGS) if (matchesString(json, text)) choices.push(literal(python));
        }
        const written = subtractDfas(this.compile({ kind: "alt", items: choices }), this.containsClose(), this.limits);
        if (!isEmptyLanguage(written)) items.push(ofDfa(written));
      }
    }
    if (items.length === 0) return null;
    return items.length === 1 && items[0]!.kind === "dfa" ? items[0]!.dfa : this.compile({ kind: "alt", items });
  }

  /**
   * A string branch's raw texts: any text without the value's closing tag, of the lengths,
   * patterns, formats and enum/const members the branch allows (the JSON Schema front end checks
   * the branch first: malformed keywords, unsupported formats and patterns are its refusals).
   */
  rawString(fn: FunctionForm, p: ParameterForm, branch: StringBranch, base = this.rawTextDfa()): ByteDfa | null {
    if (this.schemaLanguage(fn, p, { ...branch.schema, type: "string" }, branch.pointer) === null) return null;
    const s = branch.schema;
    let dfa = base;
    const min = typeof s.minLength === "number" ? s.minLength : 0;
    let max = typeof s.maxLength === "number" ? s.maxLength : Number.POSITIVE_INFINITY;
    if (max > MAX_COUNTED_LENGTH) max = max === Number.POSITIVE_INFINITY ? max : Math.max(MAX_COUNTED_LENGTH, min);
    const narrow = (other: ByteDfa): void => {
      if (!isEmptyLanguage(dfa)) dfa = intersectDfas(dfa, other, this.limits);
    };
    if (min > 0 || max !== Number.POSITIVE_INFINITY)
      narrow(compileRegex(`.{${min},${max === Number.POSITIVE_INFINITY ? "" : max}}`, { flags: "s", ...this.limits }));
    if (typeof s.pattern === "string") narrow(this.compile(ecmaSearchNode(s.pattern)));
    const format = typeof s.format === "string" ? formatNode(s.format) : null;
    if (format !== null) narrow(this.compile(format));
    const members = "const" in s ? [s.const] : Array.isArray(s.enum) ? s.enum : null;
    if (members !== null) {
      const strings = members.filter((m): m is string => typeof m === "string");
      if (strings.length === 0) return null;
      narrow(this.compile({ kind: "alt", items: strings.map(literal) }));
    }
    return isEmptyLanguage(dfa) ? null : dfa;
  }

  /**
   * A subschema's JSON texts, compiled with the parameters' definitions beside it; its errors and
   * warnings name the function, the parameter and where the keyword is in the parameters schema.
   */
  schemaLanguage(fn: FunctionForm, p: ParameterForm, schema: unknown, pointer: string): ByteDfa | null {
    const collides = isObject(schema) && Object.keys(fn.context).some((k) => k in schema);
    const document = isObject(schema) && !collides ? { ...fn.context, ...schema } : { ...fn.context, allOf: [schema] };
    const prefix = isObject(schema) && !collides ? "" : "/allOf/0";
    const where = (inner: string): string =>
      /^\/(\$defs|definitions)(\/|$)/.test(inner) ? inner : `${pointer}${inner.startsWith(prefix) ? inner.slice(prefix.length) : inner}`;
    const about = `function ${JSON.stringify(fn.name)}, parameter ${JSON.stringify(p.name)}`;
    try {
      const { dfa, warnings } = compileJsonSchema(document, this.options);
      for (const w of warnings) this.warnings.push({ keyword: w.keyword, pointer: where(w.pointer), message: `${about}: ${w.message}` });
      return dfa;
    } catch (error) {
      if (error instanceof JsonSchemaUnsatisfiableError) return null;
      if (error instanceof JsonSchemaError) {
        const said = error.message.slice(new JsonSchemaError("", error.pointer, error.keyword).message.length);
        throw new JsonSchemaError(`${about}: ${said}`, where(error.pointer), error.keyword);
      }
      throw error;
    }
  }

  /** Any text that does not hold the value's closing tag. */
  private rawTextDfa(): ByteDfa {
    this.rawText ??= textWithout([this.rawStop], this.limits);
    return this.rawText;
  }

  private closeDfa: ByteDfa | null = null;
  private containsClose(): ByteDfa {
    this.closeDfa ??= compileRegex(`.*${pyReEscape(this.rawStop)}.*`, { flags: "s", ...this.limits });
    return this.closeDfa;
  }

  private reservedDfa(pattern: string): ByteDfa {
    let dfa = this.reserved.get(pattern);
    if (dfa === undefined) this.reserved.set(pattern, (dfa = compileRegex(pattern, { flags: "s", ...this.limits })));
    return dfa;
  }

  private compile(node: RegexNode): ByteDfa {
    return compileRegexNode(node, this.limits);
  }
}

/**
 * The calls of a reply of the language above (from its first opening marker on), each with its
 * arguments as JSON text: the parameters in the order written, strings from their raw text.
 */
export function parseTaggedCalls(
  text: string,
  style: TaggedToolCallStyle,
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
): { name: string; arguments: string }[] {
  const layout = TAGGED_LAYOUTS[style];
  const breaking = VALUE_RULES[style].nameBreaking;
  const forms = new Map<string, FunctionForm>();
  const formOf = (name: string): FunctionForm | undefined => {
    let form = forms.get(name);
    if (form === undefined) {
      const tool = tools.find((t) => t.name === name);
      if (tool) forms.set(name, (form = functionForm(tool, style)));
    }
    return form;
  };
  let at = 0;
  /** Reads `layout` from `at` (the name in its place: `name`, else whatever name is written): where it ends and the name read, or null. */
  const read = (layout: readonly Piece[], name?: string): { end: number; name: string } | null => {
    let i = at;
    let read = "";
    for (const piece of layout) {
      if (piece === NAME && name === undefined) {
        const from = i;
        while (i < text.length && !breaking.test(text[i]!)) i++;
        read = text.slice(from, i);
      } else if (piece === INDEX) {
        const from = i;
        while (i < text.length && text[i]! >= "0" && text[i]! <= "9") i++;
        if (i === from) return null;
      } else if (typeof piece === "object") {
        for (let n = 0; n < piece.newlines && text[i] === "\n"; n++) i++;
      } else {
        const literal = piece === NAME ? name! : (piece as string);
        if (!text.startsWith(literal, i)) return null;
        i += literal.length;
      }
    }
    return { end: i, name: name ?? read };
  };
  const fail = (what: string): never => {
    throw new Error(`parseTaggedCalls: ${what} at ${at}`);
  };
  const expect = (layout: readonly Piece[], name?: string): string => {
    const got = read(layout, name);
    if (got === null)
      fail(
        `expected ${JSON.stringify(layout.map((p) => (typeof p === "string" ? p : p === NAME ? (name ?? "…") : p === INDEX ? "1" : "\n?")).join(""))}`,
      );
    at = got!.end;
    return got!.name;
  };
  const call = (): { name: string; arguments: string } => {
    const name = expect(layout.callOpen);
    const fn = formOf(name) ?? fail(`${JSON.stringify(name)} is not a declared function`);
    const args: string[] = [];
    for (;;) {
      // A parameter's opening tag, else the call's end (a tag naming no parameter: MiniMax-M3's `N</invoke>`).
      const open = read(layout.paramOpen);
      const p = open === null ? undefined : fn.parameters.find((q) => q.name === open.name);
      if (p === undefined) break;
      at = open!.end;
      // DSML says the value's kind before it; the other styles' values tell it by their text.
      let raw: boolean | null = null;
      if (layout.typed) {
        raw = text.startsWith(layout.typed.raw, at);
        const said = raw
          ? layout.typed.raw
          : layout.typed.byType !== undefined
            ? Object.values(layout.typed.byType).find((word) => text.startsWith(word, at))
            : text.startsWith(layout.typed.json!, at)
              ? layout.typed.json
              : undefined;
        if (said === undefined) fail("expected the value's kind");
        at += said!.length;
      }
      if (layout.cdata && text.startsWith(layout.cdata.open, at)) {
        // A string in a CDATA section: up to the section's close (it may hold the closing tag).
        const end = text.indexOf(layout.cdata.close, at + layout.cdata.open.length);
        if (end < 0) fail("an unclosed CDATA section");
        args.push(`${JSON.stringify(p.name)}:${JSON.stringify(text.slice(at + layout.cdata.open.length, end))}`);
        at = end + layout.cdata.close.length;
        expect(layout.paramClose, p.name);
        continue;
      }
      if (VALUE_RULES[style].xmlStructured && p.jsonTypes.some((t) => t === "object" || t === "array")) {
        const { json, end } = readMiniMaxXml(text, at, p.jsonSchema);
        args.push(`${JSON.stringify(p.name)}:${json}`);
        at = end;
        expect(layout.paramClose, p.name);
        continue;
      }
      const stop = text.indexOf(layout.rawStop, at);
      if (stop < 0) fail(`no ${JSON.stringify(layout.rawStop)} after the value`);
      const value = text.slice(at, stop);
      args.push(`${JSON.stringify(p.name)}:${raw === null ? valueJson(p, value, style) : raw ? JSON.stringify(value) : value}`);
      at = stop;
      expect(layout.paramClose, p.name);
    }
    expect(layout.callClose, name);
    return { name: fn.name, arguments: `{${args.join(",")}}` };
  };
  const calls: { name: string; arguments: string }[] = [];
  if (layout.block === null) {
    while (text.startsWith(layout.open, at)) {
      calls.push(call());
      if (text[at] === "\n") at++;
    }
  } else {
    expect([layout.block.open]);
    do calls.push(call());
    while (read(layout.callOpen) !== null);
    expect([layout.block.close]);
    if (text[at] === "\n") at++;
  }
  if (at !== text.length) fail("unexpected text after the calls");
  return calls;
}

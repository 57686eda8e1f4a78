/**
 * Python Jinja2 semantics on top of @huggingface/jinja, for chat templates.
 *
 * Chat templates are written against Python Jinja2 as transformers' `apply_chat_template` runs it
 * (an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loopcontrols; a `tojson`
 * with ensure_ascii=False; `raise_exception` and `strftime_now`). @huggingface/jinja parses them
 * all, but renders some of them differently or not at all. The library has no way to register
 * filters, so this module does not fork it: `PythonInterpreter` subclasses its exported
 * `Interpreter` and overrides the public `evaluate(node, env)` (which the library calls for every
 * node), handling the cases below and handing everything else back to the library, with operands
 * it has already evaluated (a `Precomputed` node) so that nothing is evaluated twice.
 *
 * Where the two differ, this follows Python Jinja2 (each case checked against Jinja2 3.1 in the
 * transformers environment, see test/prompt-chat-templates.test.ts):
 * - undefined values are Jinja2's `Undefined`: iterating one yields nothing, `length` is 0, string
 *   filters (`trim`, `upper`, `string`, ...) give "", `list`/`items`/`selectattr`/`map`... give [];
 *   `select`/`reject`/`map` families give [] on any falsy operand (Jinja2 checks `if value:`);
 * - printing (`{{ x }}`, `~`, `|string`, `|join`, `str.format`) uses Python's `str()`: None, True,
 *   1.0, 1e-05, `{'a': [1, 'b']}`;
 * - `==`, `!=`, `in` compare structurally (1 == true, [1] == [1], undefined != none);
 *   `<`/`>` compare strings and lists; `"ab" * 2` repeats;
 * - `tojson` is transformers' `json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)`,
 *   byte for byte (Python float reprs, indent=0, code-point key order, tuples);
 * - filters the library lacks or gets wrong: `string` on mappings, `min`, `max`, `unique`
 *   (case-insensitive), `join` of non-strings, Jinja2's `title` and `capitalize`, `trim(chars)`,
 *   `default` without arguments, `escape`;
 * - Python tests: `number` (booleans are numbers), `iterable` (mappings, tuples and undefined are),
 *   `float`, `lower`/`upper` (need a cased character), `escaped`;
 * - `x.items`/`x.keys`/`x.values`/`x.get` on a mapping are its methods even when it has such a key
 *   (Jinja2's attribute lookup tries the Python attribute first);
 * - mapping literals may have integer keys (`{0: 0, 512: 128}`), looked up, iterated and sorted as
 *   Python does;
 * - string methods `strip/lstrip/rstrip(chars)` with Python's whitespace, `str.format`;
 *   tuples unpack in `for a, b in [(1, 2)]`;
 * - `|safe` makes a Markup: `Markup + str` escapes the str (`&#34;`), as Python does.
 * - `list.append` / `list.pop` mutate the list as plain Jinja2 and llama.cpp's minja do
 *   (transformers' immutable sandbox refuses them with a SecurityError: the one place where this
 *   renders what the template's authors meant rather than what transformers does).
 *
 * Deliberately lenient where Python raises (a render beats a failure, and the text is unchanged
 * where Python succeeds): `tojson` of an undefined value is `null`; `"a" + 1` concatenates, and
 * `"a" + mapping` joins the mapping's JSON (templates written for string tool-call arguments, such
 * as functionary-v3.2, then read what json.dumps(arguments) would have given them); `map` gives a
 * list, not Python's generator (llama.cpp's deepseek-r1 template pipes it to `tojson`, as minja allows).
 *
 * `verbatim` characters (the sentinels chat-template.ts wraps user strings in) are never escaped by
 * `repr` or `tojson(ensure_ascii=True)`, so they still mark user text after such a filter.
 *
 * The library's values and Python's ==, < and `in` on them are in jinja-compat-values.ts, Python's
 * str(), repr(), json.dumps() and string methods in jinja-compat-text.ts, the filters and methods
 * in jinja-compat-builtins.ts; the interpreter and the template are here.
 */
import { Environment, Interpreter, Template } from "@huggingface/jinja";
import { iterate, mappingMethod, pythonFilter, pythonMethod, MAPPING_METHODS, type Arguments } from "./jinja-compat-builtins.js";
import { DEFAULT_JSON, htmlEscape, PyText, strftime } from "./jinja-compat-text.js";
import {
  bool,
  entriesOf,
  isDict,
  isList,
  isNumeric,
  isStr,
  isUndef,
  itemsOf,
  keyString,
  list,
  markup,
  markups,
  numberOf,
  ObjectValue,
  originalKeys,
  pyContains,
  pyCompare,
  pyEquals,
  pyTypeName,
  str,
  textOf,
  undef,
  dictLookup,
  type Dict,
  type Value,
} from "./jinja-compat-values.js";

/** An AST node of the library (ast.d.ts; the shapes this module reads are stated below). */
interface Node {
  readonly type: string;
}
type Statement = Node;
interface IdentifierNode extends Node {
  readonly value: string;
}
interface CallNode extends Node {
  readonly callee: Node;
  readonly args: Node[];
}
interface MemberNode extends Node {
  readonly object: Node;
  readonly property: Node;
  readonly computed: boolean;
}
interface FilterNode extends Node {
  readonly operand: Node;
  readonly filter: Node;
}
interface BodyNode extends Node {
  readonly body: Node[];
}
interface BinaryNode extends Node {
  readonly operator: { readonly value: string };
  readonly left: Node;
  readonly right: Node;
}
interface TestNode extends Node {
  readonly operand: Node;
  readonly negate: boolean;
  readonly test: IdentifierNode;
}
interface ForNode extends Node {
  readonly loopvar: Node;
  readonly iterable: Node;
}
interface SelectNode extends Node {
  readonly lhs: Node;
}
interface ObjectLiteralNode extends Node {
  readonly value: Map<Node, Node>;
}
interface KeywordArgumentNode extends Node {
  readonly key: IdentifierNode;
  readonly value: Node;
}
interface SpreadNode extends Node {
  readonly argument: Node;
}
/** A node standing for a value already evaluated (handed back to the library inside a copied node). */
interface Precomputed extends Node {
  readonly type: typeof PRECOMPUTED;
  readonly value: Value;
}
const PRECOMPUTED = "TrellisPrecomputed";

const STATEMENT_TYPES = new Set([
  "Program",
  "If",
  "For",
  "Set",
  "Macro",
  "CallStatement",
  "FilterStatement",
  "Break",
  "Continue",
  "Comment",
]);
const BODY_FIELDS = ["body", "alternate", "defaultBlock"] as const;
const METHOD_NAMES = new Set(["strip", "lstrip", "rstrip", "format", "append", "pop", "items", "keys", "values", "get"]);

class PythonInterpreter extends Interpreter {
  constructor(
    env: Environment,
    private readonly outputs: WeakSet<object>,
    private readonly text: PyText,
  ) {
    super(env);
  }

  // (`override` once the library's typings resolve; today its base class is `any` to TypeScript.)
  evaluate(statement: Statement | undefined, environment: Environment): Value {
    if (statement === undefined) return super.evaluate(statement, environment);
    const node = statement as unknown as Node;
    if (node.type === PRECOMPUTED) return (node as Precomputed).value;
    const value = this.evaluateNode(node, environment);
    // `{{ x }}` prints Python's str(x): None, True, {'a': 1}.
    return this.outputs.has(node) && !isStr(value) ? str(this.text.str(value)) : value;
  }

  renderProgram(program: Statement): string {
    return textOf(super.run(program) as Value);
  }

  private library(node: Node, environment: Environment): Value {
    return super.evaluate(node, environment);
  }

  private evaluateNode(node: Node, env: Environment): Value {
    switch (node.type) {
      case "FilterExpression":
        return this.filterExpression(node as FilterNode, env);
      case "FilterStatement": {
        const { filter, body } = node as FilterNode & BodyNode;
        return this.filterExpression(
          { type: "FilterExpression", operand: { type: "Program", body } as BodyNode, filter } as FilterNode,
          env,
        );
      }
      case "BinaryExpression":
        return this.binary(node as BinaryNode, env);
      case "TestExpression":
        return this.test(node as TestNode, env);
      case "MemberExpression":
        return this.member(node as MemberNode, env);
      case "CallExpression":
        return this.call(node as CallNode, env);
      case "ObjectLiteral":
        return this.objectLiteral(node as ObjectLiteralNode, env);
      case "For":
        return this.forLoop(node as ForNode, env);
      default:
        return this.library(node, env);
    }
  }

  private arguments(nodes: readonly Node[], env: Environment): Arguments {
    const positional: Value[] = [];
    const keyword: Dict = new Map();
    for (const node of nodes) {
      if (node.type === "KeywordArgumentExpression") {
        const { key, value } = node as KeywordArgumentNode;
        keyword.set(key.value, this.evaluate(value, env));
      } else if (node.type === "SpreadExpression") {
        const spread = this.evaluate((node as SpreadNode).argument, env);
        if (!isList(spread)) throw new Error(`Cannot unpack non-iterable type: ${spread.type}`);
        positional.push(...itemsOf(spread));
      } else if (node.type === "KeywordSpreadExpression") {
        const spread = this.evaluate((node as SpreadNode).argument, env);
        if (!isDict(spread)) throw new Error(`Argument after ** must be a mapping, not ${pyTypeName(spread)}`);
        for (const [k, v] of entriesOf(spread)) keyword.set(k, v);
      } else positional.push(this.evaluate(node, env));
    }
    return { positional, keyword };
  }

  private filterExpression(node: FilterNode, env: Environment): Value {
    const filter = node.filter;
    const name =
      filter.type === "Identifier"
        ? (filter as IdentifierNode).value
        : (filter as CallNode).callee.type === "Identifier"
          ? ((filter as CallNode).callee as IdentifierNode).value
          : "";
    const operand = this.evaluate(node.operand, env);
    const args = (): Arguments =>
      filter.type === "CallExpression" ? this.arguments((filter as CallNode).args, env) : { positional: [], keyword: new Map() };
    const result = pythonFilter(name, operand, args, this.text);
    return result ?? this.library({ ...node, operand: precomputed(operand) } as FilterNode, env);
  }

  private binary(node: BinaryNode, env: Environment): Value {
    const op = node.operator.value;
    if (op === "and" || op === "or") return this.library(node, env);
    const left = this.evaluate(node.left, env);
    const right = this.evaluate(node.right, env);
    switch (op) {
      case "==":
        return bool(pyEquals(left, right));
      case "!=":
        return bool(!pyEquals(left, right));
      case "~":
        return str(this.text.str(left) + this.text.str(right));
      case "in":
        return bool(pyContains(left, right));
      case "not in":
        return bool(!pyContains(left, right));
      case "+":
        if (isStr(left) && isStr(right)) {
          // Markup + str escapes the str (and str + Markup the other way round), as markupsafe does.
          if (markups.has(left)) return markup(textOf(left) + (markups.has(right) ? textOf(right) : htmlEscape(textOf(right))));
          if (markups.has(right)) return markup(htmlEscape(textOf(left)) + textOf(right));
        }
        // Python refuses str + mapping/list; templates written for string tool-call arguments do it
        // with the arguments object: join its JSON, as if the caller had passed json.dumps(arguments).
        if (isStr(left) && (isDict(right) || isList(right))) return str(textOf(left) + this.text.json(right, DEFAULT_JSON));
        if (isStr(right) && (isDict(left) || isList(left))) return str(this.text.json(left, DEFAULT_JSON) + textOf(right));
        break;
      case "*": {
        const [seq, times] = isNumeric(right) ? [left, right] : [right, left];
        if (isNumeric(times) && times.type !== "FloatValue" && (isStr(seq) || isList(seq))) {
          const n = Math.max(0, numberOf(times));
          if (n * (isStr(seq) ? textOf(seq).length : itemsOf(seq).length) > MAX_GENERATED_ITEMS) {
            throw new Error(`a repetition of more than ${MAX_GENERATED_ITEMS} items`);
          }
          return isStr(seq) ? str(textOf(seq).repeat(n)) : list(Array.from({ length: n }, () => itemsOf(seq)).flat());
        }
        break;
      }
      case "<":
      case ">":
      case "<=":
      case ">=":
        if ((isNumeric(left) && isNumeric(right)) || (isStr(left) && isStr(right)) || (isList(left) && isList(right))) {
          const order = pyCompare(left, right, true);
          return bool(op === "<" ? order < 0 : op === ">" ? order > 0 : op === "<=" ? order <= 0 : order >= 0);
        }
        break;
    }
    return this.library({ ...node, left: precomputed(left), right: precomputed(right) } as BinaryNode, env);
  }

  private test(node: TestNode, env: Environment): Value {
    const name = node.test.value;
    const v = (): Value => this.evaluate(node.operand, env);
    let result: boolean;
    switch (name) {
      case "number":
        result = isNumeric(v());
        break;
      case "integer":
        result = v().type === "IntegerValue";
        break;
      case "float":
        result = v().type === "FloatValue";
        break;
      case "iterable": {
        const x = v();
        result = isStr(x) || isList(x) || isDict(x) || isUndef(x);
        break;
      }
      case "sequence": {
        const x = v();
        result = isStr(x) || isList(x) || isDict(x) || isUndef(x);
        break;
      }
      case "mapping":
        result = isDict(v());
        break;
      case "lower":
      case "upper": {
        const s = this.text.str(v());
        const cased = [...s].filter((c) => c.toLowerCase() !== c.toUpperCase());
        result = cased.length > 0 && cased.every((c) => (name === "lower" ? c === c.toLowerCase() : c === c.toUpperCase()));
        break;
      }
      case "escaped":
        result = markups.has(v());
        break;
      default:
        return this.library(node, env);
    }
    return bool(node.negate ? !result : result);
  }

  private member(node: MemberNode, env: Environment): Value {
    if (node.property.type === "SliceExpression") return this.library(node, env);
    const object = this.evaluate(node.object, env);
    if (isDict(object)) {
      if (node.computed) {
        const key = this.evaluate(node.property, env);
        return (
          dictLookup(object, key) ??
          (isStr(key) ? this.library({ ...node, object: precomputed(object), property: precomputed(key) } as MemberNode, env) : undef())
        );
      }
      const name = (node.property as IdentifierNode).value;
      if (MAPPING_METHODS.has(name)) return mappingMethod(object, name);
    }
    return this.library({ ...node, object: precomputed(object) } as MemberNode, env);
  }

  private call(node: CallNode, env: Environment): Value {
    const callee = node.callee as MemberNode;
    if (callee.type !== "MemberExpression" || callee.computed || callee.property.type !== "Identifier") return this.library(node, env);
    const name = (callee.property as IdentifierNode).value;
    if (!METHOD_NAMES.has(name)) return this.library(node, env);
    const target = this.evaluate(callee.object, env);
    const method = pythonMethod(target, name, this.text);
    if (method) return method(this.arguments(node.args, env));
    return this.library({ ...node, callee: { ...callee, object: precomputed(target) } } as CallNode, env);
  }

  private objectLiteral(node: ObjectLiteralNode, env: Environment): Value {
    const entries: Dict = new Map();
    let originals: Map<string, Value> | undefined;
    for (const [keyNode, valueNode] of node.value) {
      const key = this.evaluate(keyNode, env);
      const value = this.evaluate(valueNode, env);
      if (isStr(key)) {
        originals?.delete(textOf(key));
        entries.set(textOf(key), value);
      } else {
        const k = keyString(key);
        if (!originals?.has(k)) (originals ??= new Map()).set(k, key);
        entries.set(k, value);
      }
    }
    const dict = new ObjectValue(entries);
    if (originals) originalKeys.set(dict, originals);
    return dict;
  }

  private forLoop(node: ForNode, env: Environment): Value {
    const select = node.iterable.type === "SelectExpression" ? (node.iterable as SelectNode) : null;
    const source = this.evaluate(select ? select.lhs : node.iterable, env);
    // Python iterates undefined (nothing), strings (characters), mappings (their keys, integers too),
    // and unpacks tuples; the library only lists and mappings, and unpacks lists only.
    let items: Value = source;
    if (isUndef(source) || isStr(source) || (isDict(source) && originalKeys.has(source))) items = list(iterate(source)!);
    else if (isList(source) && node.loopvar.type === "TupleLiteral" && itemsOf(source).some((x) => x.type === "TupleValue")) {
      items = list(itemsOf(source).map((x) => (x.type === "TupleValue" ? list(itemsOf(x)) : x)));
    }
    const iterable = precomputed(items);
    return this.library({ ...node, iterable: select ? { ...select, lhs: iterable } : iterable } as ForNode, env);
  }
}

function precomputed(value: Value): Precomputed {
  return { type: PRECOMPUTED, value };
}

/** Every expression that stands as output in a body (`{{ x }}`, template text): printed with str(). */
function outputNodes(program: Node): WeakSet<object> {
  const outputs = new WeakSet<object>();
  const visit = (statements: readonly Node[]): void => {
    for (const s of statements) {
      if (!STATEMENT_TYPES.has(s.type)) {
        outputs.add(s);
        continue;
      }
      for (const field of BODY_FIELDS) {
        const body = (s as unknown as Record<string, unknown>)[field];
        if (Array.isArray(body)) visit(body as Node[]);
      }
    }
  };
  visit((program as BodyNode).body);
  return outputs;
}

/** Names a template reads and never assigns (variables it expects in its context). */
function freeNames(program: Node): Set<string> {
  const read = new Set<string>();
  const assigned = new Set<string>();
  const bind = (target: unknown): void => {
    const t = target as Node | undefined;
    if (t?.type === "Identifier") assigned.add((t as IdentifierNode).value);
    else if (t?.type === "TupleLiteral") for (const x of (t as unknown as { value: Node[] }).value) bind(x);
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const x of value) visit(x);
      return;
    }
    if (value instanceof Map) {
      for (const [k, v] of value) {
        visit(k);
        visit(v);
      }
      return;
    }
    if (value === null || typeof value !== "object" || typeof (value as Node).type !== "string") return;
    const node = value as Node & Record<string, unknown>;
    switch (node.type) {
      case "Identifier":
        read.add((node as unknown as IdentifierNode).value);
        return;
      case "MemberExpression":
        visit(node.object);
        if (node.computed) visit(node.property);
        return;
      case "FilterExpression":
      case "FilterStatement":
        visit(node.type === "FilterExpression" ? node.operand : node.body);
        if ((node.filter as Node).type === "CallExpression") visit((node.filter as CallNode).args);
        return;
      case "BinaryExpression":
      case "UnaryExpression":
        visit(node.left);
        visit(node.right);
        visit(node.argument);
        return;
      case "TestExpression":
        visit(node.operand);
        return;
      case "KeywordArgumentExpression":
        visit(node.value);
        return;
      case "Set":
        bind(node.assignee);
        break;
      case "For":
        bind(node.loopvar);
        break;
      case "Macro":
        bind(node.name);
        for (const a of node.args as Node[]) bind(a.type === "KeywordArgumentExpression" ? (a as KeywordArgumentNode).key : a);
        break;
    }
    for (const [key, field] of Object.entries(node)) if (key !== "type") visit(field);
  };
  visit(program);
  for (const name of assigned) read.delete(name);
  return read;
}

/** strftime_now's formatting, for callers that render dates as templates do. */
export { strftime };

export interface JinjaRenderOptions {
  /** Characters never escaped by repr or tojson(ensure_ascii=True) (the user-string sentinels). */
  readonly verbatim?: readonly string[];
  /** The clock `strftime_now` reads (tests pin it). */
  readonly now?: () => Date;
}

/** A Jinja template rendered with Python Jinja2's semantics (see the header). */
export class JinjaTemplate {
  private readonly program: Statement;
  private readonly outputs: WeakSet<object>;
  /** Variables the template reads and never sets (what it expects from its caller). */
  readonly freeNames: ReadonlySet<string>;

  constructor(source: string) {
    this.program = new Template(source).parsed;
    const root = this.program as unknown as Node;
    this.outputs = outputNodes(root);
    this.freeNames = freeNames(root);
  }

  render(context: Record<string, unknown>, options: JinjaRenderOptions = {}): string {
    const now = options.now ?? (() => new Date());
    const globals: Record<string, unknown> = {
      true: true,
      false: false,
      none: null,
      True: true,
      False: false,
      None: null,
      range: pyRange,
      raise_exception: (message: unknown) => {
        throw new Error(String(message));
      },
      strftime_now: (format: unknown) => strftime(now(), String(format)),
    };
    const env = new Environment();
    for (const [name, value] of Object.entries({ ...globals, ...context })) env.set(name, value);
    const interpreter = new PythonInterpreter(env, this.outputs, new PyText(new Set(options.verbatim ?? [])));
    return interpreter.renderProgram(this.program);
  }
}

/**
 * Most characters or items a `*` repetition or a `range()` may make: a template computing them from
 * a user's input (a length, a count) must not hold the thread or the heap.
 */
const MAX_GENERATED_ITEMS = 1_000_000;

function pyRange(...args: unknown[]): number[] {
  const [a, b, c] = args.map(Number) as [number, number | undefined, number | undefined];
  const [start, stop, step] = b === undefined ? [0, a, 1] : [a, b, c ?? 1];
  if (step === 0) throw new Error("range() arg 3 must not be zero");
  if (!(Math.abs((stop - start) / step) <= MAX_GENERATED_ITEMS)) throw new Error(`a range() of more than ${MAX_GENERATED_ITEMS} items`);
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

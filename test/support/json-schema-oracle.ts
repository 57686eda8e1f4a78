// Python's `jsonschema` (Debian's python3-jsonschema) as the oracle of JSON Schema validity: one
// process answers a batch. Numbers are read as Decimal on both sides (schema and instance), so
// `multipleOf: 0.01` and `maximum: 0.1` mean what the spec says (exact decimal values), not
// what binary floats make of them; the validator class follows the schema's `$schema` (2020-12
// when absent), with format checking on for the formats this install checks. Patterns are
// ECMA-262's, as the spec says, where Python's `re` reads them otherwise: `\s` is ECMA's white
// space (U+FEFF too, not U+001C–U+001F or U+0085), `.` matches no line terminator (\r,
// U+2028, U+2029 too) and `$` only the end (not before a final \n); `ecma_pattern` rewrites those
// before jsonschema sees the schema.
import { spawnSync } from "node:child_process";
import { ORACLE_PYTHON } from "./paths.js";

const SCRIPT = `
import json, sys, decimal
from decimal import Decimal
# Exact arithmetic for the numbers we write (hundreds of digits): multipleOf divides them.
decimal.getcontext().prec = 4000
import jsonschema
from jsonschema import validators
from jsonschema.exceptions import ValidationError

# JSON equality for enum and const: jsonschema 4.10 compares lists and objects with Python's ==,
# for which 1 == True ([1] equals [true]); the spec keeps booleans and numbers apart at any depth.
def strict_equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    return a == b

def strict_enum(validator, enums, instance, schema):
    if not any(strict_equal(instance, e) for e in enums):
        yield ValidationError("%r is not one of %r" % (instance, enums))

def strict_const(validator, const, instance, schema):
    if not strict_equal(instance, const):
        yield ValidationError("%r was expected" % (const,))

STRICT = {"enum": strict_enum, "const": strict_const}

# ECMA-262's \\s (WhiteSpace and LineTerminator) as a Python class body, and its "." (no line terminator).
ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"

def ecma_pattern(p):
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\\\" and i + 1 < len(p):
            d = p[i + 1]
            if d == "s":
                out.append(ECMA_SPACE if in_class else "[" + ECMA_SPACE + "]")
            elif d == "S" and not in_class:
                out.append("[^" + ECMA_SPACE + "]")
            else:
                out.append(c + d)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == ".":
            c = ECMA_DOT
        elif c == "$":
            c = "\\Z"
        out.append(c)
        i += 1
    return "".join(out)

# The schema with its patterns rewritten: "pattern" strings, patternProperties' keys; not inside
# the values a schema lists (enum, const, default, examples).
def ecma_schema(node):
    if isinstance(node, list):
        return [ecma_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("enum", "const", "default", "examples"):
            out[k] = v
        elif k == "pattern" and isinstance(v, str):
            out[k] = ecma_pattern(v)
        elif k == "patternProperties" and isinstance(v, dict):
            out[k] = {ecma_pattern(pk): ecma_schema(pv) for pk, pv in v.items()}
        else:
            out[k] = ecma_schema(v)
    return out

out = []
for line in sys.stdin:
    item = json.loads(line)
    try:
        schema = ecma_schema(json.loads(item["schema"], parse_float=Decimal))
        instance = json.loads(item["text"], parse_float=Decimal)
    except Exception as e:
        out.append("unparsable: %s" % e)
        continue
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = validators.extend(cls, {k: v for k, v in STRICT.items() if k in cls.VALIDATORS})
    try:
        errors = list(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(instance))
        out.append("valid" if not errors else "invalid: %s" % errors[0].message[:200])
    except Exception as e:
        out.append("error: %s" % e)
json.dump(out, sys.stdout)
`;

/** Per item: "valid", "invalid: <first error>", "unparsable: …" (not JSON) or "error: …". */
export function pythonVerdicts(items: readonly { schema: string; text: string }[]): string[] {
  if (items.length === 0) return [];
  const input = items.map((i) => JSON.stringify(i)).join("\n");
  const run = spawnSync(ORACLE_PYTHON, ["-c", SCRIPT], { input, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`python oracle failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as string[];
}

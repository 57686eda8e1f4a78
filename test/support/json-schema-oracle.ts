// Python's `jsonschema` (Debian's python3-jsonschema) as the oracle of JSON Schema validity: one
// process answers a batch. Numbers are read as Decimal on both sides (schema and instance), so
// `multipleOf: 0.01` and `maximum: 0.1` mean what the spec says (exact decimal values), not
// what binary floats make of them; the validator class follows the schema's `$schema` (2020-12
// when absent), with format checking on for the formats this install checks.
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

out = []
for line in sys.stdin:
    item = json.loads(line)
    try:
        schema = json.loads(item["schema"], parse_float=Decimal)
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

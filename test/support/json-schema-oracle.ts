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

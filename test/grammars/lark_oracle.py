# Lark 1.1.5 oracle for the grammar tests: reads JSON requests (one per line) on stdin, answers
# one JSON line each. Request: {"grammar": str, "texts": [str]}.
# Answer: {"ok": true, "results": [bool]} or {"ok": false, "error": "Type: message"}.
import json
import sys
import warnings

warnings.simplefilter("ignore")
from lark import Lark

for line in sys.stdin:
    req = json.loads(line)
    try:
        parser = Lark(req["grammar"], parser="lalr")
    except Exception as e:  # every refusal counts, whatever its class
        print(json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, str(e)[:500])}), flush=True)
        continue
    results = []
    for text in req.get("texts", []):
        try:
            parser.parse(text)
            results.append(True)
        except Exception:
            results.append(False)
    print(json.dumps({"ok": True, "results": results}), flush=True)

# A small CPython workload for bench/rtrace.sh: builds, serialises and parses
# nested JSON documents (run with PYTHONMALLOC=malloc: every object through
# malloc, stacks ~20 frames deep).
import json
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
docs = []
for i in range(n):
    d = {"id": i, "name": f"item-{i}", "tags": [f"t{j}" for j in range(i % 7)],
         "nested": {"a": i * 1.5, "b": [i, i + 1, {"c": str(i)}]}}
    s = json.dumps(d)
    docs.append(json.loads(s))
    if len(docs) > 200:
        docs = docs[100:]
print(len(docs), sum(d["id"] for d in docs))

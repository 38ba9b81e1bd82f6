#!/usr/bin/env python3
"""A test OTLP/HTTP collector built on the official OpenTelemetry protobuf
definitions (the `opentelemetry-proto` package on PyPI).

    otlp_collector.py serve PORT_FILE OUT_FILE [--port N] [--fail-first N] [--count-only]
        Listens on 127.0.0.1 (port N, or any free one, written to PORT_FILE
        once listening), accepts POST /v1/traces (protobuf, gzip or not),
        decodes every ExportTraceServiceRequest with the official generated
        code, appends one JSON line per span to OUT_FILE (flushed before the
        answer) and answers 200 with an ExportTraceServiceResponse. With
        --fail-first N the first N requests get 503 and `Retry-After: 1`.
        Anything else (another path, a body that does not decode, a wrong
        Content-Type) gets 400 and is reported on stderr; SIGTERM stops it.

        With --count-only the spans are decoded and counted, not written:
        OUT_FILE then holds "<requests> <spans> <distinct trace ids>",
        replaced after every request (for benchmarks).

    otlp_collector.py decode FILE
        Decodes one ExportTraceServiceRequest from FILE and prints the same
        JSON lines on standard output.

A span's JSON line: trace_id, span_id, parent_span_id (hex), name, kind,
start, end (Unix ns), attributes (key -> value), events ([name, time,
attributes]), links, dropped_events, resource (key -> value), scope,
and, in serve mode, request (the request's number) and gzip.
"""

import gzip
import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    out = {}
    for kv in kvs:
        if kv.key in out:
            raise ValueError(f"attribute {kv.key!r} twice")
        out[kv.key] = any_value(kv.value)
    return out


def spans_of(request):
    for rs in request.resource_spans:
        resource = attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                if len(s.trace_id) != 16 or len(s.span_id) != 8:
                    raise ValueError(f"span {s.name!r}: bad id lengths")
                if s.parent_span_id and len(s.parent_span_id) != 8:
                    raise ValueError(f"span {s.name!r}: bad parent id length")
                if s.end_time_unix_nano < s.start_time_unix_nano:
                    raise ValueError(f"span {s.name!r} ends before it starts")
                yield {
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(),
                    "name": s.name,
                    "kind": s.kind,
                    "start": s.start_time_unix_nano,
                    "end": s.end_time_unix_nano,
                    "attributes": attrs(s.attributes),
                    "events": [
                        [e.name, e.time_unix_nano, attrs(e.attributes)] for e in s.events
                    ],
                    "dropped_events": s.dropped_events_count,
                    "links": [
                        [l.trace_id.hex(), l.span_id.hex(), attrs(l.attributes)]
                        for l in s.links
                    ],
                    "resource": resource,
                    "scope": [ss.scope.name, ss.scope.version],
                }


def serve(port_file, out_file, port, fail_first, count_only):
    out = None if count_only else open(out_file, "a", encoding="utf-8")
    state = {"requests": 0, "failed": 0, "spans": 0, "traces": set()}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, code, body=b"", headers=()):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if state["failed"] < fail_first:
                state["failed"] += 1
                self.answer(503, b"busy", [("Retry-After", "1")])
                return
            try:
                if self.path != "/v1/traces":
                    raise ValueError(f"path {self.path}")
                if self.headers.get("Content-Type") != "application/x-protobuf":
                    raise ValueError(f"Content-Type {self.headers.get('Content-Type')}")
                zipped = self.headers.get("Content-Encoding") == "gzip"
                if zipped:
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                state["requests"] += 1
                if count_only:
                    for rs in request.resource_spans:
                        for ss in rs.scope_spans:
                            for sp in ss.spans:
                                state["spans"] += 1
                                state["traces"].add(sp.trace_id)
                    with open(out_file + ".tmp", "w") as f:
                        f.write(f"{state['requests']} {state['spans']} {len(state['traces'])}\n")
                    os.replace(out_file + ".tmp", out_file)
                else:
                    for span in spans_of(request):
                        span["request"] = state["requests"]
                        span["gzip"] = zipped
                        out.write(json.dumps(span, sort_keys=True) + "\n")
                    out.flush()
            except Exception as e:  # reported, answered 400
                print(f"otlp_collector: bad request: {e}", file=sys.stderr, flush=True)
                self.answer(400, str(e).encode())
                return
            self.answer(
                200,
                ExportTraceServiceResponse().SerializeToString(),
                [("Content-Type", "application/x-protobuf")],
            )

    server = HTTPServer(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    try:
        server.serve_forever()
    finally:
        if out:
            out.close()


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "decode":
        request = ExportTraceServiceRequest()
        with open(sys.argv[2], "rb") as f:
            request.ParseFromString(f.read())
        for span in spans_of(request):
            print(json.dumps(span, sort_keys=True))
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "serve":
        port, fail_first, count_only = 0, 0, False
        rest = sys.argv[4:]
        while rest:
            if rest[0] == "--port":
                port = int(rest[1])
            elif rest[0] == "--fail-first":
                fail_first = int(rest[1])
            elif rest[0] == "--count-only":
                count_only = True
                rest = rest[1:]
                continue
            else:
                sys.exit(f"unknown option {rest[0]}")
            rest = rest[2:]
        serve(sys.argv[2], sys.argv[3], port, fail_first, count_only)
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()

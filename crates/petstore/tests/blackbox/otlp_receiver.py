"""An OTLP/HTTP trace receiver for the black-box tests, decoding with OpenTelemetry's own
protobuf definitions (opentelemetry-proto, installed by scripts/test-tools.sh).

    python otlp_receiver.py DUMP_DIR [--hang]

Prints `listening on PORT` once it listens on 127.0.0.1, then for each export a JSON line with
its request's headers ({"headers": {...}}, names in lowercase), and one JSON line per span:
trace_id, span_id, parent_span_id (hex, "" for none), name, kind (SpanKind's number),
attributes, links ([{trace_id, span_id}]) and the resource's attributes. Every request's raw
body is also written to DUMP_DIR (so a test can search it for what must never be exported).
With --hang it reads each request and never answers (a collector that is stuck).
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

DUMP = Path(sys.argv[1])
HANG = "--hang" in sys.argv[2:]
LOCK = threading.Lock()
COUNT = [0]


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {pair.key: value(pair.value) for pair in pairs}


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with LOCK:
            COUNT[0] += 1
            (DUMP / f"{COUNT[0]}.bin").write_bytes(body)
            print(json.dumps({"headers": {k.lower(): v for k, v in self.headers.items()}}), flush=True)
        if HANG:
            time.sleep(3600)
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(
                        json.dumps(
                            {
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                "name": span.name,
                                "kind": span.kind,
                                "status": span.status.code,
                                "attributes": attributes(span.attributes),
                                "links": [
                                    {
                                        "trace_id": link.trace_id.hex(),
                                        "span_id": link.span_id.hex(),
                                    }
                                    for link in span.links
                                ],
                                "resource": resource,
                            }
                        )
                    )
        with LOCK:
            for line in lines:
                print(line, flush=True)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
server.daemon_threads = True
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()

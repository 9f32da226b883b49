"""A stand-in OTLP/HTTP collector for the telemetry overhead benchmark: answers 200 to
every POST (``/v1/metrics``, ``/v1/traces``, ``/v1/logs``) after reading its body.
``python -m bench.otlp_sink PORT``; stops on SIGTERM."""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: one line per export is noise


def main(port: int) -> None:
    ThreadingHTTPServer(("127.0.0.1", port), Sink).serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]))

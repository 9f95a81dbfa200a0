#!/usr/bin/env python3
"""A webhook endpoint Islet did not write: every POST is verified with the
`standardwebhooks` package (the Standard Webhooks reference library for Python)
against the secret in SECRET_FILE, and reported as one JSON line on stdout:
{"id", "type", "activity_id", "verified", "error", "answered"}.

Usage: webhook_receiver.py SECRET_FILE [--fail-first N] [--retry-after S]
The first line printed is {"port": P}: the receiver listens on 127.0.0.1:P (port 0
picked by the system). The first N requests are answered 500 (with Retry-After S
when given), the rest 204. The secret file is read at each request (the secret is
known only once the webhook exists).
"""
import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

lock = threading.Lock()
state = {"seen": 0}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("secret_file")
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--retry-after", default=None)
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_POST(self):
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            verified, error, payload = False, None, {}
            try:
                with open(args.secret_file) as f:
                    secret = f.read().strip()
                payload = Webhook(secret).verify(body, headers)
                verified = True
            except WebhookVerificationError as e:
                error = f"verification: {e}"
            except Exception as e:  # no secret yet, a body that is not JSON…
                error = f"{type(e).__name__}: {e}"
            with lock:
                state["seen"] += 1
                fail = state["seen"] <= args.fail_first
            status = 500 if fail else 204
            record = {
                "id": headers.get("webhook-id"),
                "type": payload.get("type") if isinstance(payload, dict) else None,
                "activity_id": (payload.get("data") or {}).get("activity_id") if isinstance(payload, dict) else None,
                "verified": verified,
                "error": error,
                "answered": status,
                "signatures": len(headers.get("webhook-signature", "").split()),
            }
            self.send_response(status)
            if fail and args.retry_after is not None:
                self.send_header("Retry-After", args.retry_after)
            self.send_header("Content-Length", "0")
            self.end_headers()
            with lock:
                print(json.dumps(record), flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

"""An APNs written on the h2 library (PyPI), not on Islet's HTTP/2 code: for testing
Islet's APNs client against a server it was not tuned to.

It answers POST /3/device/<token> over TLS (ALPN h2) as APNs would, choosing the
answer by the token's first two hex digits:
  ba  400 {"reason": "BadDeviceToken"}
  0e  410 {"reason": "Unregistered", "timestamp": 1700000000000}
  d7  400 {"reason": "DeviceTokenNotForTopic"}
  ee  RST_STREAM INTERNAL_ERROR, every time
  7e  RST_STREAM REFUSED_STREAM the first time an apns-id is seen, then 200
  any other: 200 with the request's apns-id (or one made up), as APNs echoes it.
With --goaway-after N, the first connection answers nothing until N requests have
arrived, then answers those up to the (N/2)-th, sends GOAWAY naming its stream as
the last processed, drops the rest unprocessed (as a GOAWAY allows), and closes.

Usage: h2_apns_server.py CERT KEY [--goaway-after N]
Prints "port=<port>" once listening on 127.0.0.1, then one JSON line per request:
{"connection", "stream", "apns_id", "token", "answer"} where answer is a status,
"reset", "refused" or "dropped" (above a GOAWAY's last stream, never processed).
"""
import asyncio
import json
import ssl
import sys
import uuid

from h2.errors import ErrorCodes

from h2_peer import H2Peer

cert, key = sys.argv[1:3]
goaway_after = int(sys.argv[sys.argv.index("--goaway-after") + 1]) if "--goaway-after" in sys.argv else 0

connections = 0
refused_once = set()


def log(**fields):
    print(json.dumps(fields), flush=True)


class APNsProtocol(H2Peer):
    def __init__(self):
        super().__init__()
        global connections
        self.number = connections
        connections += 1
        self.held = []
        self.last_stream = None  # set once a GOAWAY was sent
        self.holding = goaway_after > 0 and self.number == 0

    def protocol_error(self, error):
        log(connection=self.number, error=str(error))

    def request_ended(self, stream_id):
        request = self.requests.pop(stream_id, None)
        if request is None:
            return
        headers = request["headers"]
        path = headers.get(":path", "")
        token = path.rsplit("/", 1)[-1]
        apns_id = headers.get("apns-id")
        if self.last_stream is not None and stream_id > self.last_stream:
            log(connection=self.number, stream=stream_id, apns_id=apns_id, token=token, answer="dropped")
            return
        if self.holding:
            self.held.append((stream_id, token, apns_id))
            if len(self.held) >= goaway_after:
                self.go_away()
            return
        self.answer(stream_id, token, apns_id)

    def go_away(self):
        self.holding = False
        self.last_stream = self.held[goaway_after // 2 - 1][0]
        # Answers first: h2 sends nothing after its GOAWAY.
        for stream_id, token, apns_id in self.held:
            if stream_id <= self.last_stream:
                self.answer(stream_id, token, apns_id)
            else:
                log(connection=self.number, stream=stream_id, apns_id=apns_id, token=token, answer="dropped")
        self.held = []
        self.conn.close_connection(error_code=ErrorCodes.NO_ERROR, last_stream_id=self.last_stream)
        self.flush()
        # Writes already made are sent before the close.
        self.transport.close()

    def answer(self, stream_id, token, apns_id):
        def entry(answer):
            log(connection=self.number, stream=stream_id, apns_id=apns_id, token=token, answer=answer)

        if token.startswith("ee"):
            self.conn.reset_stream(stream_id, error_code=ErrorCodes.INTERNAL_ERROR)
            entry("reset")
            return
        if token.startswith("7e") and apns_id not in refused_once:
            refused_once.add(apns_id)
            self.conn.reset_stream(stream_id, error_code=ErrorCodes.REFUSED_STREAM)
            entry("refused")
            return
        answer_id = apns_id or str(uuid.uuid4())
        if token.startswith("ba"):
            self.fail(stream_id, answer_id, 400, {"reason": "BadDeviceToken"})
            entry(400)
        elif token.startswith("0e"):
            self.fail(stream_id, answer_id, 410, {"reason": "Unregistered", "timestamp": 1700000000000})
            entry(410)
        elif token.startswith("d7"):
            self.fail(stream_id, answer_id, 400, {"reason": "DeviceTokenNotForTopic"})
            entry(400)
        else:
            self.conn.send_headers(stream_id, [(":status", "200"), ("apns-id", answer_id)], end_stream=True)
            entry(200)

    def fail(self, stream_id, apns_id, status, body):
        data = json.dumps(body).encode()
        self.conn.send_headers(stream_id, [
            (":status", str(status)), ("apns-id", apns_id), ("content-type", "application/json"),
            ("content-length", str(len(data))),
        ])
        self.conn.send_data(stream_id, data, end_stream=True)


async def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    server = await asyncio.get_running_loop().create_server(APNsProtocol, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    print(f"port={port}", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())

"""What the h2 peers (h2_apns_server.py, google_fcm_server.py) share: a server-side
HTTP/2 connection on the h2 library that gathers each stream's request (headers and
body) and hands it over once the stream ends."""
import asyncio

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import ConnectionTerminated, DataReceived, RequestReceived, StreamEnded, StreamReset


class H2Peer(asyncio.Protocol):
    """Calls request_ended(stream_id) when a stream's request is whole (it is in
    self.requests[stream_id], as {"headers", "body"}); protocol_error(error) when the
    client broke HTTP/2 (the connection is then closed)."""

    def __init__(self):
        self.conn = H2Connection(config=H2Configuration(client_side=False, header_encoding="utf-8"))
        self.requests = {}

    def connection_made(self, transport):
        self.transport = transport
        self.conn.initiate_connection()
        self.flush()

    def flush(self):
        if self.transport.is_closing():
            return
        data = self.conn.data_to_send()
        if data:
            self.transport.write(data)

    def protocol_error(self, error):
        pass

    def request_ended(self, stream_id):
        raise NotImplementedError

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except Exception as error:  # a protocol error: say so and go
            self.protocol_error(error)
            self.transport.close()
            return
        for event in events:
            if isinstance(event, RequestReceived):
                self.requests[event.stream_id] = {"headers": dict(event.headers), "body": b""}
            elif isinstance(event, DataReceived):
                if event.stream_id in self.requests:
                    self.requests[event.stream_id]["body"] += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                self.request_ended(event.stream_id)
            elif isinstance(event, StreamReset):
                self.requests.pop(event.stream_id, None)
            elif isinstance(event, ConnectionTerminated):
                self.transport.close()
        self.flush()

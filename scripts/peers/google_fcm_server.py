"""A token endpoint and FCM's messages:send written on the h2 library and Google's
own google-auth (PyPI), not on Islet's code: for testing Islet's FCM client and its
service-account assertions against a server it was not tuned to.

Over TLS (ALPN h2) on 127.0.0.1:
  POST /token  a form with grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer and
               an assertion, which google-auth's jwt.decode verifies against the
               service account's public key (PUBLIC_KEY, PEM) and the audience (this
               endpoint's URL); its scope must name firebase.messaging. Answers
               {"access_token", "expires_in": 3599, "token_type": "Bearer"}, or 400
               {"error": "invalid_grant", "error_description"}.
  POST /v1/projects/<project>/messages:send  needs "Bearer <a token it issued>"
               (else 401 UNAUTHENTICATED) and a JSON {"message": {"token", "data"}}
               whose data values are strings (else 400 INVALID_ARGUMENT); a token
               starting "dead" answers 404 UNREGISTERED; otherwise 200 {"name"}.

Usage: google_fcm_server.py CERT KEY PUBLIC_KEY
Prints "port=<port>" once listening, then one JSON line per request: {"path",
"status", "claims"?, "error"?}.
"""
import asyncio
import json
import ssl
import sys
import urllib.parse

from google.auth import jwt as google_jwt

from h2_peer import H2Peer

cert, key, public_key_file = sys.argv[1:4]
with open(public_key_file) as file:
    public_key = file.read()

port = 0
issued = set()
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"


def log(**fields):
    print(json.dumps(fields), flush=True)


def fcm_error(status, api_status, message, code=None):
    error = {"code": status, "message": message, "status": api_status}
    if code:
        error["details"] = [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]
    return status, {"error": error}


def token_answer(body):
    form = dict(urllib.parse.parse_qsl(body.decode()))
    if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
        return 400, {"error": "unsupported_grant_type"}, None
    try:
        claims = google_jwt.decode(form.get("assertion", ""), certs=public_key, audience=f"https://127.0.0.1:{port}/token")
    except Exception as error:  # google-auth's refusal, as Google words it
        return 400, {"error": "invalid_grant", "error_description": str(error)}, None
    if SCOPE not in claims.get("scope", "").split():
        return 400, {"error": "invalid_scope", "error_description": "firebase.messaging is not asked for"}, claims
    token = f"peer-token-{len(issued) + 1}"
    issued.add(token)
    return 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}, claims


def send_answer(path, headers, body):
    authorization = headers.get("authorization", "")
    if not authorization.startswith("Bearer ") or authorization[7:] not in issued:
        return fcm_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
    try:
        message = json.loads(body)["message"]
    except (ValueError, KeyError, TypeError):
        return fcm_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
    if not all(isinstance(value, str) for value in message.get("data", {}).values()):
        return fcm_error(400, "INVALID_ARGUMENT", "Invalid value at 'message.data' (TYPE_STRING)")
    if message.get("token", "").startswith("dead"):
        return fcm_error(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED")
    project = path.split("/")[3]
    return 200, {"name": f"projects/{project}/messages/0:{len(issued)}"}


class Protocol(H2Peer):
    def protocol_error(self, error):
        log(error=str(error))

    def request_ended(self, stream_id):
        request = self.requests.pop(stream_id, None)
        if request is None:
            return
        headers, body = request["headers"], request["body"]
        path = headers.get(":path", "")
        if path == "/token":
            status, answer, claims = token_answer(body)
            log(path=path, status=status, claims=claims, error=answer.get("error_description") or answer.get("error"))
        elif path.startswith("/v1/projects/") and path.endswith("/messages:send"):
            status, answer = send_answer(path, headers, body)
            log(path=path, status=status)
        else:
            status, answer = 404, {"error": "not found"}
            log(path=path, status=status)
        data = json.dumps(answer).encode()
        self.conn.send_headers(stream_id, [
            (":status", str(status)), ("content-type", "application/json"), ("content-length", str(len(data))),
        ])
        self.conn.send_data(stream_id, data, end_stream=True)


async def main():
    global port
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    print(f"port={port}", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())

"""Independent APNs clients sent to an APNs simulator: each signs its own provider
tokens and speaks HTTP/2 itself, so that the simulator is judged by peers it was not
written with.

Clients:
  aioapns   the aioapns library (PyPI), its own token signer and HTTP/2 connection
  pyjwt     tokens signed by PyJWT (PyPI), sent with httpx over HTTP/2 (PyPI), with
            header names in mixed case as a dictionary of headers often has them
  apnswift  tokens shaped as APNSwift 6.4 shapes them: pretty-printed JSON with line
            breaks, "typ", "iat" a string of seconds, "kid" repeated among the claims
  node-apn  as node-apn (jsonwebtoken) shapes them: compact, "typ", "iat" before "iss"
  apns2     as Go's sideshow/apns2 (jwt-go) shapes them: keys sorted, no "typ"
  pushy     as Java's pushy shapes them: "typ", and a DER-encoded signature (Java's
            SHA256withECDSA), not the raw r || s of RFC 7518
The shaped tokens are signed here with the cryptography package and sent with httpx.

Every client runs the same cases, each on a connection of its own:
  alert        an alert to DEVICE_TOKEN (valid: 200; the simulator learns it is a device)
  start        a Live Activity push-to-start to a fresh token (valid: 200)
  expired      an alert with a token issued 3,700 s ago (403 ExpiredProviderToken)
  wrong-key    an alert with a token signed by WRONG_KEY under the same key id
               (403 InvalidProviderToken)
  kind-mixup   a Live Activity update to DEVICE_TOKEN (400 DeviceTokenNotForTopic)

Usage: apns_clients.py HOST PORT INSPECT_PORT CA KEY WRONG_KEY KEY_ID TEAM_ID DEVICE_TOKEN
Prints one JSON object: {"results": [{client, case, status, reason, apns_id,
http_version}], "pushes": <GET /pushes of the inspection API>}.
"""
import asyncio
import base64
import json
import logging
import ssl
import sys
import time
import types
import uuid

import httpx
import jwt
from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection as aioapns_connection
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

logging.getLogger("aioapns").setLevel(logging.CRITICAL)

host, port, inspect_port, ca, key_path, wrong_key_path, key_id, team_id, device_token = sys.argv[1:10]
port = int(port)
key_pem = open(key_path).read()
wrong_key_pem = open(wrong_key_path).read()

APP_TOPIC = "com.example.app"
LIVE_ACTIVITY_TOPIC = APP_TOPIC + ".push-type.liveactivity"
EXPIRED_AGE = 3_700
TIMEOUT = 30

ALERT = {"aps": {"alert": {"title": "Order", "body": "On its way"}}}


def start_payload():
    return {"aps": {
        "timestamp": int(time.time()), "event": "start", "attributes-type": "DeliveryAttributes",
        "attributes": {"orderID": "A-1"}, "content-state": {"eta": "12:30", "step": 1},
        "alert": {"title": "Order on its way", "body": "Arrives at 12:30"}, "input-push-token": 1,
    }}


def update_payload():
    return {"aps": {"timestamp": int(time.time()), "event": "update", "content-state": {"eta": "12:40", "step": 2}}}


def fresh_token(client):
    """A push-to-start token of its own for each client: 32 bytes of hex."""
    return uuid.uuid5(uuid.NAMESPACE_URL, client).hex * 2


def cases(client):
    """(case, device token, push type, topic, payload, token age, signing key PEM)."""
    return [
        ("alert", device_token, "alert", APP_TOPIC, ALERT, 0, key_pem),
        ("start", fresh_token(client), "liveactivity", LIVE_ACTIVITY_TOPIC, start_payload(), 0, key_pem),
        ("expired", device_token, "alert", APP_TOPIC, ALERT, EXPIRED_AGE, key_pem),
        ("wrong-key", device_token, "alert", APP_TOPIC, ALERT, 0, wrong_key_pem),
        ("kind-mixup", device_token, "liveactivity", LIVE_ACTIVITY_TOPIC, update_payload(), 0, key_pem),
    ]


def context():
    return ssl.create_default_context(cafile=ca)


# MARK: aioapns

async def aioapns_case(name, token, push_type, topic, payload, age, pem):
    # aioapns knows only Apple's hosts: point its sandbox protocol at the simulator.
    aioapns_connection.APNsDevelopmentClientProtocol.APNS_SERVER = host
    aioapns_connection.APNsDevelopmentClientProtocol.APNS_PORT = port
    # Its signer reads the clock through the module's `time`: an older clock there
    # makes it sign an old token, and nothing else.
    real_time = time.time
    aioapns_connection.time = types.SimpleNamespace(time=lambda: real_time() - age)
    apns = APNs(key=pem, key_id=key_id, team_id=team_id, topic=APP_TOPIC, use_sandbox=True,
                ssl_context=context(), max_connections=1)
    try:
        request = NotificationRequest(device_token=token, message=payload, push_type=PushType(push_type),
                                      apns_topic=topic)
        result = await asyncio.wait_for(apns.send_notification(request), TIMEOUT)
        return {"status": int(result.status), "reason": result.description, "apns_id": result.notification_id,
                "sent_apns_id": request.notification_id, "http_version": "HTTP/2"}
    finally:
        aioapns_connection.time = time
        apns.pool.close()


def run_aioapns():
    out = []
    for case in cases("aioapns"):
        result = asyncio.run(aioapns_case(*case))
        out.append({"client": "aioapns", "case": case[0], **result})
    return out


# MARK: PyJWT and httpx

def pyjwt_token(pem, age):
    return jwt.encode({"iss": team_id, "iat": int(time.time()) - age}, pem, algorithm="ES256", headers={"kid": key_id})


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def shaped_token(shape, pem, age):
    """A token with the header and claims exactly as `shape`'s library writes them."""
    iat = int(time.time()) - age
    if shape == "apnswift":
        header = '{\n    "alg": "ES256",\n    "typ": "JWT",\n    "kid": "%s"\n}' % key_id
        claims = '{\n    "iss": "%s",\n    "iat": "%d",\n    "kid": "%s"\n}' % (team_id, iat, key_id)
    elif shape == "node-apn":
        header = json.dumps({"alg": "ES256", "typ": "JWT", "kid": key_id}, separators=(",", ":"))
        claims = json.dumps({"iat": iat, "iss": team_id}, separators=(",", ":"))
    elif shape == "apns2":
        header = json.dumps({"alg": "ES256", "kid": key_id}, separators=(",", ":"), sort_keys=True)
        claims = json.dumps({"iss": team_id, "iat": iat}, separators=(",", ":"), sort_keys=True)
    elif shape == "pushy":
        header = json.dumps({"alg": "ES256", "typ": "JWT", "kid": key_id}, separators=(",", ":"))
        claims = json.dumps({"iss": team_id, "iat": iat}, separators=(",", ":"))
    else:
        raise ValueError(shape)
    signing_input = b64(header.encode()) + "." + b64(claims.encode())
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    if shape == "pushy":
        signature = der
    else:
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return signing_input + "." + b64(signature)


def httpx_case(client, name, token, push_type, topic, payload, age, pem):
    provider_token = pyjwt_token(pem, age) if client == "pyjwt" else shaped_token(client, pem, age)
    apns_id = str(uuid.uuid4())
    if client == "pyjwt":
        # Header names as people write them; HTTP/2 sends them in lowercase.
        headers = {"Authorization": "Bearer " + provider_token, "APNs-Topic": topic, "APNs-Push-Type": push_type,
                   "APNs-ID": apns_id, "APNs-Priority": "10", "Content-Type": "application/json"}
    else:
        headers = {"authorization": "bearer " + provider_token, "apns-topic": topic, "apns-push-type": push_type,
                   "apns-id": apns_id}
    with httpx.Client(http1=False, http2=True, verify=context(), timeout=TIMEOUT) as http:
        response = http.post(f"https://{host}:{port}/3/device/{token}", headers=headers,
                             content=json.dumps(payload).encode())
    reason = response.json().get("reason") if response.content else None
    return {"client": client, "case": name, "status": response.status_code, "reason": reason,
            "apns_id": response.headers.get("apns-id"), "sent_apns_id": apns_id,
            "http_version": response.http_version}


def run_httpx(client):
    return [httpx_case(client, *case) for case in cases(client)]


def main():
    results = run_aioapns()
    for client in ["pyjwt", "apnswift", "node-apn", "apns2", "pushy"]:
        results += run_httpx(client)
    with httpx.Client(timeout=TIMEOUT) as http:
        pushes = http.get(f"http://{host}:{inspect_port}/pushes").json()
    print(json.dumps({"results": results, "pushes": pushes}))


main()

"""Google's own Python SDK, firebase-admin (PyPI), sending to Islet's FCM simulator
(`islet sim --fcm`) over its plain-HTTP/1.1 port, as a team's backend would send to
FCM: for testing the simulator against a client it was not written with.

firebase_admin is initialized with credentials.Certificate(ACCOUNT_JSON), a service
account the simulator trusts whose token_uri is the simulator's /token, so that
google-auth gets its access tokens there; messaging's FCM URL, a class attribute of
its messaging service, is pointed at BASE_URL as a test would patch it. The faults
and the dead token are scripted through the simulator's inspection API (POST /faults,
POST /unregister, POST /accounts) on the same port.

Cases, in order:
  valid              a data message with android priority, ttl and collapse_key:
                     a message name projects/<project>/messages/...
  unregistered       to a token the simulator was told is dead: UnregisteredError
  quota_exceeded     during a scripted QUOTA_EXCEEDED (Retry-After: 1), for every
                     attempt firebase-admin makes: QuotaExceededError
  sender_id_mismatch from a second app, of another project, to the first app's
                     device: SenderIdMismatchError
  unavailable        during a scripted UNAVAILABLE (Retry-After: 1), for every
                     attempt: UnavailableError
  invalid_argument   to a malformed token: InvalidArgumentError

Usage: firebase_admin_client.py ACCOUNT_JSON BASE_URL
Prints one JSON line per case: {"case", "ok", "expected", "got", ...}; exits 1 when
any case got something other than it expected.
"""
import datetime
import json
import sys
import warnings

import firebase_admin
import requests
from firebase_admin import _http_client, credentials, exceptions, messaging

DEVICE = "android-device-token-0001:APA91bHx-islet"
DEAD = "android-device-token-0002:APA91bHx-gone"
ACTIVITY = "order-42"

# firebase-admin 7.7 deprecates Message.token for Message.fid (a Firebase installation
# id); Islet and the simulator address devices by registration token, which FCM's v1
# API still takes.
warnings.filterwarnings("ignore", message="Message.token is deprecated")

account_file, base_url = sys.argv[1:3]
base_url = base_url.rstrip("/")
with open(account_file) as file:
    account = json.load(file)
project = account["project_id"]
# The file names the simulator's HTTP/2 token endpoint (for Islet); google-auth speaks
# HTTP/1.1, and posts to the simulator's HTTP/1.1 /token.
account["token_uri"] = base_url + "/token"

# Where firebase-admin sends: the simulator instead of fcm.googleapis.com. The service
# reads the class attribute when it is made, on an app's first send.
messaging._MessagingService.FCM_URL = base_url + "/v1/projects/{0}/messages:send"
# Every attempt firebase-admin makes at a send that keeps failing with a status it
# retries (its urllib3 Retry: status retries, after Retry-After).
ATTEMPTS = _http_client.DEFAULT_RETRY_CONFIG.status + 1

app = firebase_admin.initialize_app(credentials.Certificate(account), name="islet-sim")
failures = 0


def inspect(method, path, body=None):
    response = requests.request(method, base_url + path, json=body, timeout=30)
    response.raise_for_status()
    return response.json() if response.content else None


def sequence():
    messages = inspect("GET", "/messages")["messages"]
    return messages[-1]["sequence"] if messages else 0


def report(case, expected, got, **fields):
    global failures
    ok = got == expected and all(value for key, value in fields.items() if key.startswith("check_"))
    if not ok:
        failures += 1
    print(json.dumps({"case": case, "ok": ok, "expected": expected, "got": got, **fields}), flush=True)


def send(case, message, expected, on=None, attempts=None):
    """Sends `message` (from the app `on`); reports the name or the error's class."""
    before = sequence()
    fields = {}
    try:
        got = messaging.send(message, app=on or app)
        if expected == "name":
            fields["name"] = got
            got = "name" if got.startswith(f"projects/{project}/messages/") else got
    except exceptions.FirebaseError as error:
        fields["code"] = error.code
        fields["http_status"] = error.http_response.status_code if error.http_response is not None else None
        got = type(error).__name__
    except Exception as error:  # anything else is a mismatch, reported as such
        got = f"{type(error).__name__}: {error}"
    seen = [record for record in inspect("GET", f"/messages?after={before}")["messages"]]
    fields["attempts"] = len(seen)
    fields["statuses"] = [record["status"] for record in seen]
    if attempts is not None:
        fields["check_attempts"] = len(seen) == attempts
    report(case, expected, got, **fields)


def data_message(token, **android):
    return messaging.Message(
        token=token,
        data={
            "islet_event": "start",
            "islet_activity_id": ACTIVITY,
            "islet_activity_type": "DeliveryAttributes",
            "content_state": json.dumps({"status": "preparing", "eta": 25}),
            "attributes": json.dumps({"order": "A42"}),
            "timestamp": "1800000000",
        },
        android=messaging.AndroidConfig(**android) if android else None,
    )


send(
    "valid",
    data_message(DEVICE, priority="high", ttl=datetime.timedelta(seconds=600), collapse_key=f"islet-{ACTIVITY}"),
    "name",
    attempts=1,
)

inspect("POST", "/unregister", {"token": DEAD})
send("unregistered", data_message(DEAD), "UnregisteredError", attempts=1)

inspect("POST", "/faults", {"fault": "QUOTA_EXCEEDED", "count": ATTEMPTS, "retry_after": 1})
send("quota_exceeded", data_message(DEVICE), "QuotaExceededError", attempts=ATTEMPTS)

other = inspect("POST", "/accounts", {"project_id": f"{project}-other"})
other_app = firebase_admin.initialize_app(credentials.Certificate(other), name="islet-sim-other")
send("sender_id_mismatch", data_message(DEVICE), "SenderIdMismatchError", on=other_app, attempts=1)

inspect("POST", "/faults", {"fault": "UNAVAILABLE", "count": ATTEMPTS, "retry_after": 1})
send("unavailable", data_message(DEVICE), "UnavailableError", attempts=ATTEMPTS)

# Refused before it reaches a device, so the simulator records no message.
send("invalid_argument", data_message("not a token!"), "InvalidArgumentError", attempts=0)

pending = inspect("GET", "/faults")["faults"]
report("faults_used_up", [], pending)

firebase_admin.delete_app(other_app)
firebase_admin.delete_app(app)
sys.exit(1 if failures else 0)

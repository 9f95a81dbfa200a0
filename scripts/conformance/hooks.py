"""Schemathesis hooks for Islet's OpenAPI conformance test (OpenAPIConformanceTests).

Two judgements are made again here, on the request as it was actually sent:

1. Schemathesis labels a case positive or negative by how it generated it, and a
   value that `parameters` in the config pins (the app id) replaces a mutated one
   after that label was given; in a few coverage and stateful cases the label is then
   wrong (a "negative" request whose every part is valid, a "positive" one whose body
   is not). A failure of `positive_data_acceptance` or `negative_data_rejection` is
   kept only when the request sent really is valid, or really is invalid, by the
   document: each path, query and header parameter and the body are validated
   against their schemas.

2. Some refusals of a schema-valid request come from rules that JSON Schema cannot
   state: the state of the data (an audience naming no device that can be started, a
   token already registered as another kind, an idempotency key used for another
   request), the clock (a stale date or end time that has passed), the size of the
   whole APNs payload, a key inside its PEM armour that is no P-256 key, the
   addresses a webhook URL's host resolves to, the activity types the app
   registered, and the order of a timeline's entries. docs/api.md documents each as a
   422 naming its field. Rules the document can state (PEM armour, URL shape, event
   types, the widget name with its format, enum values) are in it, and not here. A 422 for a valid request is accepted only when every error it
   lists is one of these, recognised by field and message below; any other 422 for a
   valid request still fails the run.
"""

import json
import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

import jsonschema_rs
import schemathesis
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.openapi.checks import RejectedPositiveData, UseAfterFree

# (field, message) of the 422s that rules beyond the document give; see 2. above.
RULES = [
    # No device of the audience holds a token for the activity type (or a device token).
    (r"audience\.(user_ids|device_ids|tags)", r"^names no device"),
    # The three kinds of token never mix.
    (r"(token|apns_token)", r"^is a \w+ token, not a \w+ token$"),
    # An update token for an existing activity names that activity's type.
    (r"activity_type", r"^must be \S+, the type the activity has$"),
    # strict_activity_types: the type must be registered.
    (r"activity_type", r"^is not registered"),
    # end_at lies ahead and within the activity's window.
    (r"end_at", r"^must (lie ahead|come before)"),
    # A stale date in the past.
    (r"stale_date", r"lies before now"),
    # The whole payload over APNs's limit (of a send, or of a timeline entry).
    (r"(((timeline\.)?entries\[\d+\]\.)?(payload|content_state|alert)|attributes)", r"over the \d+-byte limit"),
    # A send_at long past, or after the activity's windows.
    (r"send_at", r"^(lies more than \d+ s in the past|comes after the activity's)"),
    # Timeline entries in increasing time, inside the window, after the start.
    (r"(timeline\.)?entries\[\d+\]\.at", r"^(must come after entries|comes after the activity's update window|must not come before the start)"),
    (r"(timeline\.)?entries\[\d+\]\.stale_date", r"lies before now"),
    (r"(timeline\.)?end_at", r"^must (lie ahead|come before|not come before the last entry)"),
    # Renewal starts the successor with the start's alert.
    (r"renew", r"^needs an activity Islet started"),
    # A webhook URL's host must resolve to addresses webhooks may reach (its shape is
    # in the document).
    (r"url", r"^.* \(private addresses need --webhooks-allow-private\)$"),
    # A tap dated within a few minutes of the server's clock, the activity's start
    # and the push it counts on.
    (r"tapped_at", r"^must not be more than \d+ seconds (ahead of|before) "),
    # The same Idempotency-Key with another request.
    (r"Idempotency-Key", r"^was used with a different request$"),
    # A start's delivery and the fields that go with it: an audience unless on a
    # channel, a channel only on one, a scheduled start on tokens, a channel of the app.
    (r"audience", r"^is required \(unless delivery is channel\)$"),
    (r"channel_id", r"^(is taken only with delivery channel|names no channel of the app)$"),
    (r"channel_environment", r"^is taken only with delivery channel"),
    (r"delivery", r"^(must be tokens for a start with send_at|needs devices on iOS 18 or later)$"),
    # A service account's JSON is taken as Google gives it (any members); what it
    # must hold (its members, an RSA key, an https token URI) is checked as a group.
    (r"fcm\.service_account(\.\w+)?", r"^(is required|must be .+)$"),
    # The fields of the other platform, and a device's platform for good.
    (r"(environment|apns_token|fcm_token|frequent_updates|os_version)", r"^(is required for an ios device|is not taken from an android device|is taken only from an? (ios|android) device|must be an FCM registration token)"),
    # An iOS device joins an activity with its update token; an android one without.
    (r"token", r"^is required of an ios device"),
    # An Android holder's data message over FCM's limit, named by its largest field.
    (r"(content_state|attributes|stale_date|dismissal_date|timestamp|islet_\w+)", r"over FCM's \d+-byte limit"),
    # The key inside the PEM armour (which the document gives) must be a P-256 key.
    (r"apns\.private_key", r"^must be the \.p8 key's PEM text \(a P-256 private key\)"),
]
# Checks against a registered activity type: the device could not decode the value.
DECODE_DETAIL = "The device could not decode this into "

_document = None


def document():
    global _document
    if _document is None:
        with open(os.environ["ISLET_OPENAPI_DOCUMENT"]) as file:
            _document = json.load(file)
    return _document


def is_valid(schema, value):
    root = dict(schema)
    root["components"] = document()["components"]
    return jsonschema_rs.validator_for(root, validate_formats=True).is_valid(value)


def operation_of(case):
    return document()["paths"][case.operation.path][case.method.lower()]


def sent_request_is_valid(case, response):
    """Whether every part of the request as sent is valid by the document."""
    operation = operation_of(case)
    request = response.request
    url = urlsplit(request.url)
    template = case.operation.path.strip("/").split("/")
    parts = url.path.strip("/").split("/")
    if len(template) != len(parts):
        return False
    path = {}
    for name, part in zip(template, parts):
        if name.startswith("{"):
            path[name[1:-1]] = unquote(part)
        elif name != part:
            return False
    query = {}
    for name, value in parse_qsl(url.query, keep_blank_values=True):
        if name in query:
            return False  # a parameter given twice is not in the document
        query[name] = value
    documented_query = set()
    for parameter in operation.get("parameters", []):
        name, location, schema = parameter["name"], parameter["in"], parameter["schema"]
        if location == "path":
            value = path.get(name)
        elif location == "query":
            documented_query.add(name)
            value = query.get(name)
            if value is not None and schema.get("type") == "integer":
                if not re.fullmatch(r"-?[0-9]+", value):
                    return False
                value = int(value)
        elif location == "header":
            value = request.headers.get(name)
        else:
            continue
        if value is None:
            if parameter.get("required"):
                return False
            continue
        if not is_valid(schema, value):
            return False
    if set(query) - documented_query:
        return False
    body = request.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "surrogateescape")
    spec = operation.get("requestBody")
    if not body or not body.strip():
        return not (spec and spec.get("required"))
    if spec is None:
        return True  # the route reads no body; none was documented to send
    media = (request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if media != "application/json":
        return False
    try:
        value = json.loads(body)
    except ValueError:
        return False
    return is_valid(spec["content"]["application/json"]["schema"], value)


def is_rule_refusal(response):
    """Whether a 422 lists only faults of rules the document cannot state."""
    try:
        problem = json.loads(response.content)
    except ValueError:
        return False
    detail = problem.get("detail", "")
    errors = problem.get("errors") or []
    if not errors:
        return False
    for error in errors:
        field, message = error.get("field", ""), error.get("message", "")
        if detail.startswith(DECODE_DETAIL) and re.match(r"(((timeline\.)?entries\[\d+\]\.)?content_state|attributes)(\.|\[|$)", field):
            continue
        if not any(re.fullmatch(f, field) and re.search(m, message) for f, m in RULES):
            return False
    return True


def note(reason, case, response):
    """Records a dropped failure when ISLET_CONFORMANCE_DROPPED names a file."""
    path = os.environ.get("ISLET_CONFORMANCE_DROPPED")
    if path:
        with open(path, "a") as file:
            body = response.request.body
            if isinstance(body, bytes):
                body = body.decode("utf-8", "replace")
            file.write(json.dumps({
                "reason": reason, "operation": f"{case.method} {case.operation.path}", "url": response.request.url,
                "body": body, "status": response.status_code, "answer": response.content.decode("utf-8", "replace"),
            }) + "\n")


@schemathesis.hook
def filter_failure(context, failure, case, response):
    # DELETE …/timeline cancels the entries not yet sent; the timeline itself, with
    # its entries marked cancelled, stays readable (docs/api.md): not a use after free.
    if isinstance(failure, UseAfterFree) and case.operation.path.endswith("/timeline"):
        note("timeline read after its entries were cancelled", case, response)
        return False
    if isinstance(failure, RejectedPositiveData):
        if not sent_request_is_valid(case, response):
            note("positive case sent invalid", case, response)
            return False
        if response.status_code == 422 and is_rule_refusal(response):
            note("rule refusal", case, response)
            return False
        return True
    if isinstance(failure, AcceptedNegativeData):
        if sent_request_is_valid(case, response):
            note("negative case sent valid", case, response)
            return False
    return True

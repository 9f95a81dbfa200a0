"""The README's walk-through, through a Python client that openapi-python-client
generated from Islet's OpenAPI document (the `islet_client` package in PACKAGE_DIR):
every call is the generated function of its operation, every request body the
generated model of its schema, and every answer read through the generated model
of its declared answer, by attribute (an answer the document left untyped has no
attributes, and the walk-through fails on it).

Two phases, since the update token is minted by the simulated phone in between:

  start   creates the app (admin token from ISLET_ADMIN_TOKEN, APNs key from
          ISLET_APNS_KEY_PEM), registers phone-1 and its push-to-start token, and
          starts order-42; prints one JSON line with the app's id, keys and the
          device's secret.
  finish  (with --state, the start's line, and --update-token) registers the
          update token, updates and ends the activity, and reads it and its
          pushes back; prints one JSON line with what it read.

A failed check exits with status 1, naming it.
"""

import argparse
import importlib
import json
import os
import sys
import typing

DEVICE = "phone-1"
ACTIVITY = "order-42"
TYPE = "DeliveryAttributes"


def fail(message):
    print(json.dumps({"failed": message}), flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def operation(tag, name):
    return importlib.import_module(f"islet_client.api.{tag}.{name}")


def body(module, values):
    """The generated model of the operation's request body, made from `values`."""
    hint = typing.get_type_hints(module._get_kwargs)["body"]
    # An optional body is `Model | Unset`: the model is the member that reads a dict.
    members = typing.get_args(hint) or (hint,)
    model = next(member for member in members if hasattr(member, "from_dict"))
    return model.from_dict(values)


def call(module, *path, client, expected, values=None, **headers):
    """Calls the operation; checks the status; answers the parsed answer."""
    arguments = dict(headers)
    if values is not None:
        arguments["body"] = body(module, values)
    response = module.sync_detailed(*path, client=client, **arguments)
    check(
        response.status_code == expected,
        f"{module.__name__}: {response.status_code} instead of {expected}: {response.content[:500]!r}",
    )
    parsed = response.parsed
    check(parsed is not None, f"{module.__name__}: the answer was not parsed")
    return parsed


def start(base, admin_token, key_pem):
    from islet_client import AuthenticatedClient

    admin = AuthenticatedClient(base_url=base, token=admin_token)
    app = call(
        operation("admin", "post_v1_apps"), client=admin, expected=201,
        values={
            "name": "Walk-through", "bundle_id": "com.example.walkthrough",
            "apns": {"team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": key_pem},
        },
    )
    app_id, server_key, device_key = app.id, app.server_key, app.device_key
    check(app_id.startswith("app_") and server_key.startswith("islet_sk_") and device_key.startswith("islet_dk_"),
          f"the app's id and keys: {app_id}, {server_key[:9]}, {device_key[:9]}")

    # 1. The app registers its device, then a push-to-start token for the type.
    device = AuthenticatedClient(base_url=base, token=device_key)
    registered = call(
        operation("device", "put_v1_apps_app_id_devices_device_id"), app_id, DEVICE, client=device, expected=201,
        values={"platform": "ios", "environment": "sandbox", "user_id": "user-1"},
    )
    secret = registered.device_secret
    check(isinstance(secret, str) and secret, "the registration shows the device's secret")
    call(
        operation("device", "put_v1_apps_app_id_devices_device_id_push_to_start_activity_type"),
        app_id, DEVICE, TYPE, client=device, expected=201, values={"token": os.urandom(32).hex()},
        islet_device_secret=secret,
    )

    # 2. The backend starts the activity on the user's devices.
    server = AuthenticatedClient(base_url=base, token=server_key)
    started = call(
        operation("server", "post_v1_apps_app_id_activities"), app_id, client=server, expected=202,
        values={
            "activity_id": ACTIVITY, "activity_type": TYPE, "attributes": {"order": "42"},
            "content_state": {"status": "preparing", "eta_minutes": 25},
            "alert": {"title": "Order 42", "body": "We are preparing your order"},
            "audience": {"user_ids": ["user-1"]},
        },
    )
    check(started.activity_id == ACTIVITY and started.targets == 1, f"the start: {started.to_dict()}")
    print(json.dumps({"app_id": app_id, "server_key": server_key, "device_key": device_key, "device_secret": secret}),
          flush=True)


def finish(base, state, update_token):
    from islet_client import AuthenticatedClient

    app_id = state["app_id"]
    device = AuthenticatedClient(base_url=base, token=state["device_key"])
    server = AuthenticatedClient(base_url=base, token=state["server_key"])

    # 3. The phone's update token, registered by the app.
    call(
        operation("device", "put_v1_apps_app_id_devices_device_id_activities_activity_id"),
        app_id, DEVICE, ACTIVITY, client=device, expected=201,
        values={"activity_type": TYPE, "token": update_token}, islet_device_secret=state["device_secret"],
    )
    # 4. The backend updates it, 5. and ends it.
    updated = call(
        operation("server", "post_v1_apps_app_id_activities_activity_id_update"), app_id, ACTIVITY, client=server,
        expected=202, values={"content_state": {"status": "on the way", "eta_minutes": 10}},
    )
    check(updated.targets == 1, f"the update: {updated.to_dict()}")
    ended = call(
        operation("server", "post_v1_apps_app_id_activities_activity_id_end"), app_id, ACTIVITY, client=server,
        expected=202, values={"content_state": {"status": "delivered", "eta_minutes": 0}},
    )
    check(ended.targets == 1, f"the end: {ended.to_dict()}")

    # 6. What happened: the activity, its copies, and its pushes.
    activity = call(
        operation("server", "get_v1_apps_app_id_activities_activity_id"), app_id, ACTIVITY, client=server,
        expected=200,
    )
    check(activity.activity_id == ACTIVITY and activity.status == "ended", f"the activity: {activity.to_dict()}")
    copies = [copy.device_id for copy in activity.devices]
    check(copies == [DEVICE], f"the activity's copies: {copies}")
    pushes = call(
        operation("server", "get_v1_apps_app_id_activities_activity_id_pushes"), app_id, ACTIVITY, client=server,
        expected=200,
    )
    events = sorted(push.event for push in pushes.items)
    check(events == ["end", "start", "update"], f"the activity's pushes: {[push.to_dict() for push in pushes.items]}")
    check(all(push.apns_id for push in pushes.items), "every push has its apns-id")
    print(json.dumps({
        "activity_status": activity.status, "copies": copies, "pushes": events,
        "statuses": sorted(str(push.status) for push in pushes.items),
    }), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package_dir")
    parser.add_argument("base_url")
    parser.add_argument("phase", choices=["start", "finish"])
    parser.add_argument("--state")
    parser.add_argument("--update-token")
    args = parser.parse_args()
    sys.path.insert(0, args.package_dir)
    if args.phase == "start":
        start(args.base_url, os.environ["ISLET_ADMIN_TOKEN"], os.environ["ISLET_APNS_KEY_PEM"])
    else:
        finish(args.base_url, json.loads(args.state), args.update_token)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Islet's soak run (`make soak`): a long mixed load against `islet serve` sending to
a separate `islet sim` that injects faults, and an account of every push at the end.

It starts `islet sim` (503s on a share of pushes, a GOAWAY after every N streams on a
connection, latency on every answer) and `islet serve` on its own temporary data
folder, pointed at the simulator through `--apns-sandbox-url`,
`--apns-production-url` and `--apns-ca-file`. Both listen on ports they pick
themselves (port 0), read back from their output. Then, for the duration, it drives
many apps at once: device and push-to-start registrations, activity starts to
audiences (the simulated phone hands back each update token, as an app would),
updates, ends (some scheduled with `end_at`, some by the device), notifications,
reads, and once a minute one update fanned out to an activity held by thousands of
devices. Some tokens are known to the simulator as another environment's, so that
APNs refuses them (BadDeviceToken) and Islet's dead-token handling runs too.

At the end it lets the queue drain and accounts for every push: each one the API
queued is sent, failed with a reason, or dropped with a reason, as the push
listings, /metrics and the server's database say, and each is checked against what
the simulator received. It samples the server's resident memory, threads and open
files every 10 s, and classifies every warning or error the server logged.

Exit status 0 when nothing is lost, memory, threads and files stay flat, and no
unexplained error was logged; 1 otherwise; 2 when the run could not be made.
Every process it starts is stopped, on Ctrl-C or failure too.

Usage: soak.py [--seconds N] [--apps N] [--fanout N] [--rate R] [--keep]
"""
import argparse
import collections
import ctypes
import http.client
import json
import os
import random
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISLET = os.path.join(ROOT, ".build/release/islet")
ADMIN = "soak-admin-token-0123456789abcdef"
TEAM_ID = "SOAKTEAM01"
ACTIVITY_TYPE = "DeliveryAttributes"
FANOUT_ACTIVITY = "fanout"
SAMPLE_SECONDS = 10

# What a request may answer, by kind; anything else is an unexpected answer.
EXPECTED = {
    "create app": {201},
    "register device": {200, 201},
    "register push-to-start token": {200, 201},
    "register update token": {200, 201, 409},
    "register fan-out token": {200, 201},
    "start activity": {202, 422},
    "update activity": {202, 409},
    "end activity": {200, 202},
    "end on device": {200},
    "notification": {202, 422},
    "fan-out update": {202},
    "fan-out end": {202},
    "read activity": {200},
    "list activities": {200},
    "list pushes": {200},
    "metrics": {200},
    "healthz": {200},
    "sim: register token": {201},
    "sim: read activity": {200},
    "sim: read activities": {200},
}

# Warning and error lines that an injected fault explains: a 503 from APNs, a
# GOAWAY, a connection that closed or was refused, the breaker those open, or an
# answer slowed by the latency.
FAULT_PATTERNS = re.compile(
    r"ServiceUnavailable|\b503\b|circuit|GOAWAY|goaway|refused stream|REFUSED_STREAM|"
    r"connection (was )?(closed|lost|reset|refused)|timed out|keeps failing", re.I)


class HarnessError(Exception):
    """The run itself could not be made (not a finding about the server)."""


class Stop(Exception):
    """SIGTERM or SIGHUP: stop as Ctrl-C would."""


# MARK: - Processes

def _die_with_parent():
    # A child outlives no harness killed without a chance to clean up.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Child:
    """A process started by the run, its output copied to a file line by line."""

    def __init__(self, name, cmd, log_path, on_line=None):
        self.name, self.log_path = name, log_path
        self.log = open(log_path, "w", buffering=1)
        self.on_line = on_line
        self.process = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True, preexec_fn=_die_with_parent)
        self.lines = collections.deque(maxlen=200)
        self.readers = [threading.Thread(target=self._read, args=(stream, label), daemon=True)
                        for stream, label in ((self.process.stdout, "out"), (self.process.stderr, "err"))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, label):
        for line in stream:
            line = line.rstrip("\n")
            self.log.write(f"{label} {line}\n")
            self.lines.append(line)
            if self.on_line:
                self.on_line(label, line)

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def stop(self, timeout=60):
        """SIGTERM, then SIGKILL after `timeout`; answers the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        for reader in self.readers:
            reader.join(timeout=5)
        self.log.close()
        return self.process.returncode


def wait_for(condition, timeout, what, interval=0.1, alive=None):
    """Polls `condition` until it answers something true; raises after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if alive is not None and not alive():
            raise HarnessError(f"{what}: the process exited")
        if time.monotonic() >= deadline:
            raise HarnessError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise HarnessError(f"{' '.join(cmd[:3])} failed ({out.returncode}): {out.stderr[-500:]}")
    return out.stdout


# MARK: - HTTP

class Counts:
    """Thread-safe counters."""

    def __init__(self):
        self.lock = threading.Lock()
        self.values = collections.Counter()

    def add(self, key, n=1):
        with self.lock:
            self.values[key] += n

    def snapshot(self):
        with self.lock:
            return collections.Counter(self.values)


class Http:
    """JSON over HTTP/1.1 with one kept-alive connection per thread; every request
    counted by kind and status, and checked against what its kind may answer."""

    def __init__(self, port, requests, unexpected):
        self.port = port
        self.requests = requests
        self.unexpected = unexpected
        self.local = threading.local()
        self.latencies = collections.defaultdict(list)
        self.lock = threading.Lock()

    def _connection(self):
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.local.connection = connection
        return connection

    def call(self, kind, method, path, key=None, body=None, idempotency_key=None, parse=True, headers=None):
        headers = dict(headers or {})
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        started = time.monotonic()
        for attempt in range(3):
            connection = self._connection()
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                raw = response.read()
                status = response.status
                break
            except (http.client.HTTPException, OSError) as error:
                # A kept-alive connection the server closed: open another and send
                # again (sends carry an Idempotency-Key, so a replay sends nothing).
                connection.close()
                self.local.connection = None
                self.requests.add((kind, "transport retry"))
                if attempt == 2:
                    self.requests.add((kind, "transport error"))
                    self.unexpected.append(f"{kind} {method} {path}: {error}")
                    return None, None
        elapsed = time.monotonic() - started
        self.requests.add((kind, status))
        with self.lock:
            self.latencies[kind].append(elapsed)
        if status not in EXPECTED.get(kind, {200}):
            self.unexpected.append(f"{kind} {method} {path} → {status}: {raw[:300].decode(errors='replace')}")
        if not parse:
            return status, raw
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None


# MARK: - The simulator's records

class SimRecords:
    """Reads every record of the simulator's inspection API as it comes (it keeps
    only the latest 20,000), keeping per `apns-id` what each attempt was answered."""

    def __init__(self, api, fan_tokens):
        self.api = api
        self.seq = 0
        self.gaps = 0
        self.total = 0
        self.by_id = collections.defaultdict(list)  # apns-id → [(status, reason, injected, outcome, note)]
        self.statuses = collections.Counter()  # (status, reason, injected)
        self.outcomes = collections.Counter()  # (push type, outcome, note) of 200s
        self.connections = set()
        self.started = collections.deque()  # (sim activity id, push-to-start token) to hand to the phone
        self.fan_tokens = fan_tokens
        self.fan_rounds = collections.defaultdict(lambda: {"seen": set(), "last": None})
        self.lock = threading.Lock()
        self.last_new = time.monotonic()

    def poll(self):
        status, body = self.api.call("sim: read pushes", "GET", f"/pushes?after={self.seq}")
        if status != 200 or not body:
            return 0
        records = body.get("pushes", [])
        now = time.monotonic()
        with self.lock:
            for record in records:
                sequence = record["sequence"]
                if sequence != self.seq + 1:
                    self.gaps += sequence - self.seq - 1
                self.seq = sequence
                self.total += 1
                answer = record.get("answer", {})
                headers = record.get("headers", {})
                apns_id = (headers.get("apns-id") or answer.get("apns_id") or "").lower()
                st, reason, injected = answer.get("status"), answer.get("reason"), record.get("injected_fault", False)
                outcome, note = record.get("device_outcome"), record.get("device_note")
                self.by_id[apns_id].append((st, reason, injected, outcome, note))
                self.statuses[(st, reason or "", injected)] += 1
                self.connections.add(record.get("connection"))
                if st == 200:
                    self.outcomes[(record.get("push_type"), outcome, simplify(note))] += 1
                    if outcome == "started" and record.get("activity_id"):
                        self.started.append((record["activity_id"], record.get("token")))
                    token = record.get("token")
                    if token in self.fan_tokens:
                        aps = (record.get("payload") or {}).get("aps", {})
                        event = aps.get("event")
                        label = "end" if event == "end" else (aps.get("content-state") or {}).get("round")
                        entry = self.fan_rounds[label]
                        if token not in entry["seen"]:
                            entry["seen"].add(token)
                            entry["last"] = now
            if records:
                self.last_new = now
        return len(records)


def simplify(note):
    """A device note without its numbers, so that notes of one kind count together."""
    return re.sub(r"\(\d+ ≤ \d+\)", "(…)", note) if note else ""


# MARK: - The model of the apps, devices and activities

class Device:
    def __init__(self, device_id, user, token, stale):
        self.id, self.user, self.token, self.stale = device_id, user, token, stale
        self.start_token = None
        self.start_stale = False


class Activity:
    def __init__(self, app, activity_id, end_at=None):
        self.app, self.id, self.end_at = app, activity_id, end_at
        self.started = time.monotonic()
        self.targets = collections.Counter()  # event → targets the API answered
        self.scheduled = end_at is not None
        self.ended = False
        self.holders = set()  # devices that registered an update token


class App:
    def __init__(self, index, app_id, server_key, device_key):
        self.index, self.id, self.server_key, self.device_key = index, app_id, server_key, device_key
        self.lock = threading.Lock()
        self.devices = {}
        self.secrets = {}  # device id → the device secret its registration answered
        self.running = {}
        self.activities = {}
        self.notification_targets = 0
        self.next_device = 0


class Soak:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.rng = random.Random(args.seed)
        self.rng_lock = threading.Lock()
        self.requests = Counts()
        self.unexpected = []
        self.harness_errors = []
        self.children = []
        self.apps = []
        self.by_start_token = {}  # push-to-start token → (app, device id)
        self.fan_tokens = set()
        self.token_answers = {}  # (app index, activity id, device id) → answer to the update token's registration
        self.fan_requests = {}  # round → (monotonic time sent, targets)
        self.samples = []  # (seconds into the load, rss MB, threads, open files)
        self.details = []  # (seconds into the load, threads by name, open files by kind)
        self.server_lines = []  # warning and error lines, as logged
        self.server_url = None
        self.stopping = threading.Event()
        self.activity_counter = 0
        self.counter_lock = threading.Lock()
        self.t0 = None
        self.sim_strays = 0
        self.after_accounting = None

    # MARK: Set-up

    def rand(self):
        with self.rng_lock:
            return self.rng.random()

    def choice(self, items):
        with self.rng_lock:
            return self.rng.choice(items)

    def next_activity_id(self):
        with self.counter_lock:
            self.activity_counter += 1
            return f"a{self.activity_counter}"

    def start_processes(self):
        keys = []
        for index in range(self.args.apps):
            path = os.path.join(self.work, f"AuthKey_{index}.p8")
            run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
            keys.append((f"SOAKKEY{index:03d}", path))
        self.keys = keys
        ca = os.path.join(self.work, "sim-ca.pem")
        cmd = [ISLET, "sim", "--quiet", "--port", "0", "--inspect-port", "0", "--ca-out", ca,
               "--latency-ms", str(self.args.latency_ms), "--fail-rate", str(self.args.fail_rate),
               "--fail-status", "503", "--goaway-after", str(self.args.goaway_after), "--threads", "1"]
        for key_id, path in keys:
            cmd += ["--trust", f"{key_id}:{TEAM_ID}:{path}"]
        banner = {}

        def sim_line(label, line):
            match = re.search(r"on https://[\d.]+:(\d+), inspection on http://[\d.]+:(\d+)", line)
            if match:
                banner["apns"], banner["inspect"] = int(match.group(1)), int(match.group(2))
            elif label == "err":
                self.sim_strays += 1

        sim = Child("islet sim", cmd, os.path.join(self.work, "sim.log"), sim_line)
        self.children.append(sim)
        self.sim = sim
        wait_for(lambda: banner.get("inspect"), 30, "islet sim's ports", alive=sim.alive)
        self.sim_port, self.inspect_port = banner["apns"], banner["inspect"]
        print(f"  islet sim (pid {sim.pid}): APNs on :{self.sim_port}, inspection on :{self.inspect_port}; "
              f"injecting {self.args.fail_rate:.0%} 503s, GOAWAY after {self.args.goaway_after} streams, "
              f"{self.args.latency_ms} ms latency", flush=True)

        data = os.path.join(self.work, "data")
        url = f"https://127.0.0.1:{self.sim_port}"
        cmd = [ISLET, "serve", "--port", "0", "--data-dir", data, "--admin-token", ADMIN,
               "--apns-sandbox-url", url, "--apns-production-url", url, "--apns-ca-file", ca,
               "--log-format", "json", "--log-level", "info"]
        self.database = os.path.join(data, "islet.sqlite")
        server = Child("islet serve", cmd, os.path.join(self.work, "serve.log"), self.server_line)
        self.children.append(server)
        self.server = server
        wait_for(lambda: self.server_url, 60, "islet serve's port", alive=server.alive)
        self.port = int(self.server_url.rsplit(":", 1)[1])
        print(f"  islet serve (pid {server.pid}) on :{self.port}, data in {data}", flush=True)
        self.api = Http(self.port, self.requests, self.unexpected)
        self.sim_api = Http(self.inspect_port, self.requests, self.unexpected)
        self.records = SimRecords(self.sim_api, self.fan_tokens)

    def server_line(self, label, line):
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            if line.strip():
                self.server_lines.append(("unparsed", line))
            return
        if event.get("msg") == "listening" and event.get("url"):
            self.server_url = event["url"]
        if event.get("level") in ("warning", "error"):
            self.server_lines.append((event.get("level"), line))

    def create_apps(self):
        for index, (key_id, path) in enumerate(self.keys):
            with open(path) as f:
                pem = f.read()
            status, body = self.api.call("create app", "POST", "/v1/apps", ADMIN, {
                "name": f"Soak {index}", "bundle_id": f"com.example.soak{index}",
                "apns": {"team_id": TEAM_ID, "key_id": key_id, "private_key": pem}})
            if status != 201:
                raise HarnessError(f"cannot create app {index}: {status} {body}")
            self.apps.append(App(index, body["id"], body["server_key"], body["device_key"]))
        # A few devices per app to begin with; the load adds more.
        for app in self.apps:
            for _ in range(self.args.initial_devices):
                self.register_device(app, new=True)
                self.register_start_token(app)
        # The server opens a pool of APNs connections, with its event-loop thread,
        # per signing key and environment, on first use; a token refused as
        # BadDeviceToken is tried in the other environment. One such device and
        # one alert to it per app open every pool before the load, so that what
        # the memory and thread figures judge is the load, not the first use.
        for app in self.apps:
            token = secrets.token_hex(32)
            self.sim_token(token, "device", "production")
            self.api.call("register device", "PUT", f"/v1/apps/{app.id}/devices/warm-up", app.device_key,
                          {"platform": "ios", "environment": "sandbox", "apns_token": token, "user_id": "warm-up"},
                          headers=self.secret_header(app, "warm-up"))
            status, answer = self.api.call(
                "notification", "POST", f"/v1/apps/{app.id}/notifications", app.server_key,
                {"audience": {"user_ids": ["warm-up"]}, "alert": {"title": "Hello", "body": "Warming up"}},
                idempotency_key=f"warm-up-{app.id}")
            if status == 202:
                app.notification_targets += answer["targets"]

    @staticmethod
    def secret_header(app, device_id):
        """The Islet-Device-Secret header of a device the soak registered (its app
        requires it for every request after the one that created the device)."""
        with app.lock:
            secret = app.secrets.get(device_id)
        return {"Islet-Device-Secret": secret} if secret else {}

    def sim_token(self, token, kind, environment):
        self.sim_api.call("sim: register token", "POST", "/tokens", body={
            "token": token, "kind": kind, "environment": environment})

    def setup_fanout(self):
        """Devices of app 0 holding one activity, each with an update token the
        simulated device knows (so that every update reaches a running activity)."""
        app = self.apps[0]
        tokens = [secrets.token_hex(32) for _ in range(self.args.fanout)]
        self.fan_tokens.update(tokens)
        activity = Activity(app, FANOUT_ACTIVITY)
        app.activities[FANOUT_ACTIVITY] = activity
        self.fanout = activity

        def register(part):
            for i in part:
                device = f"fan-{i:05d}"
                self.sim_token(tokens[i], "live_activity_update", "sandbox")
                _, registered = self.api.call("register device", "PUT", f"/v1/apps/{app.id}/devices/{device}",
                                              app.device_key, {"platform": "ios", "environment": "sandbox", "user_id": "fan"})
                secret = (registered or {}).get("device_secret")
                self.api.call("register fan-out token", "PUT",
                              f"/v1/apps/{app.id}/devices/{device}/activities/{FANOUT_ACTIVITY}", app.device_key,
                              {"activity_type": ACTIVITY_TYPE, "token": tokens[i]},
                              headers={"Islet-Device-Secret": secret} if secret else {})
        lanes = 4
        threads = [threading.Thread(target=register, args=(range(k, self.args.fanout, lanes),), daemon=True)
                   for k in range(lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    # MARK: Operations

    def register_device(self, app, new=None):
        with app.lock:
            if new is None:
                new = not app.devices or self.rand() < 0.4
            if new:
                app.next_device += 1
                device = Device(f"d{app.next_device}", f"u{self.rng.randrange(self.args.users)}", None, False)
            else:
                device = self.choice(list(app.devices.values()))
        token = secrets.token_hex(32)
        stale = self.rand() < self.args.stale_share
        if stale:
            # Known to the simulator as a production token: APNs (sandbox) refuses it.
            self.sim_token(token, "device", "production")
        status, answer = self.api.call("register device", "PUT", f"/v1/apps/{app.id}/devices/{device.id}",
                                       app.device_key, {"platform": "ios", "environment": "sandbox", "apns_token": token,
                                                        "user_id": device.user, "tags": ["soak", f"group-{device.user[-1]}"]},
                                       headers=self.secret_header(app, device.id))
        if status in (200, 201):
            with app.lock:
                device.token, device.stale = token, stale
                app.devices[device.id] = device
                if answer and answer.get("device_secret"):
                    app.secrets[device.id] = answer["device_secret"]

    def register_start_token(self, app):
        with app.lock:
            if not app.devices:
                return
            device = self.choice(list(app.devices.values()))
        token = secrets.token_hex(32)
        stale = self.rand() < self.args.stale_share
        if stale:
            self.sim_token(token, "push_to_start", "production")
        status, _ = self.api.call("register push-to-start token", "PUT",
                                  f"/v1/apps/{app.id}/devices/{device.id}/push-to-start/{ACTIVITY_TYPE}",
                                  app.device_key, {"token": token}, headers=self.secret_header(app, device.id))
        if status in (200, 201):
            with app.lock:
                device.start_token, device.start_stale = token, stale
                self.by_start_token[token] = (app, device.id)

    def start_activity(self, app, remaining):
        with app.lock:
            users = sorted({d.user for d in app.devices.values() if d.start_token})
        if not users:
            return self.register_start_token(app)
        with self.rng_lock:
            audience = self.rng.sample(users, min(len(users), self.rng.randint(1, 3)))
            scheduled = remaining > 150 and self.rng.random() < 0.15
            end_in = self.rng.randint(45, 90)
        activity_id = self.next_activity_id()
        body = {"activity_id": activity_id, "activity_type": ACTIVITY_TYPE,
                "attributes": {"order": activity_id, "store": f"store-{app.index}"},
                "content_state": {"status": "preparing", "eta": 30, "step": 0},
                "alert": {"title": "Order", "body": f"Order {activity_id} is being prepared"},
                "audience": {"user_ids": audience}}
        end_at = None
        if scheduled:
            end_at = int(time.time()) + end_in
            body["end_at"] = end_at
        status, answer = self.api.call("start activity", "POST", f"/v1/apps/{app.id}/activities", app.server_key,
                                       body, idempotency_key=f"start-{activity_id}")
        if status == 202:
            activity = Activity(app, activity_id, end_at)
            activity.targets["start"] += answer["targets"]
            with app.lock:
                app.activities[activity_id] = activity
                app.running[activity_id] = activity

    def pick_running(self, app, min_age=0.0):
        now_wall = time.time()
        now = time.monotonic()
        with app.lock:
            for activity in list(app.running.values()):
                if activity.end_at and activity.end_at <= now_wall + 3:
                    # Its scheduled end is (about to be) due: the server ends it.
                    del app.running[activity.id]
            candidates = [a for a in app.running.values() if now - a.started >= min_age]
            return self.choice(candidates) if candidates else None

    def update_activity(self, app):
        activity = self.pick_running(app)
        if activity is None:
            return self.start_activity(app, remaining=0)
        with self.rng_lock:
            step = self.rng.randint(1, 1_000_000)
            alert = self.rng.random() < 0.2
        body = {"content_state": {"status": "on its way", "eta": max(1, 30 - step % 30), "step": step}}
        if alert:
            body["alert"] = {"title": "Order", "body": "Your order is nearly there"}
        key = f"update-{activity.id}-{step}-{secrets.token_hex(4)}"
        status, answer = self.api.call("update activity", "POST",
                                       f"/v1/apps/{app.id}/activities/{activity.id}/update", app.server_key, body,
                                       idempotency_key=key)
        if status == 202:
            with app.lock:
                activity.targets["update"] += answer["targets"]

    def end_activity(self, app):
        activity = self.pick_running(app, min_age=10)
        if activity is None:
            return self.update_activity(app)
        with app.lock:
            app.running.pop(activity.id, None)
        body = {}
        with self.rng_lock:
            if self.rng.random() < 0.5:
                body["content_state"] = {"status": "delivered", "eta": 0, "step": 1_000_001}
            if self.rng.random() < 0.3:
                body["dismissal_date"] = int(time.time()) + 60
        status, answer = self.api.call("end activity", "POST", f"/v1/apps/{app.id}/activities/{activity.id}/end",
                                       app.server_key, body, idempotency_key=f"end-{activity.id}")
        if status == 202:
            with app.lock:
                activity.targets["end"] += answer["targets"]
                activity.ended = True
        elif status == 200:
            activity.ended = True

    def end_on_device(self, app):
        # The phone's own end: one device's copy of a running activity it holds.
        activity = self.pick_running(app, min_age=10)
        with app.lock:
            holders = sorted(activity.holders) if activity else []
        if not holders:
            return self.read(app)
        device_id = self.choice(holders)
        self.api.call("end on device", "POST", f"/v1/apps/{app.id}/devices/{device_id}/activities/{activity.id}/end",
                      app.device_key, {}, headers=self.secret_header(app, device_id))

    def notify(self, app):
        with app.lock:
            users = sorted({d.user for d in app.devices.values() if d.token})
        if not users:
            return self.register_device(app, new=True)
        with self.rng_lock:
            if self.rng.random() < 0.2:
                audience = {"tags": [f"group-{self.rng.randrange(10)}"]}
            else:
                audience = {"user_ids": self.rng.sample(users, min(len(users), self.rng.randint(1, 5)))}
        status, answer = self.api.call("notification", "POST", f"/v1/apps/{app.id}/notifications", app.server_key,
                                       {"audience": audience, "alert": {"title": "News", "body": "Something happened"}},
                                       idempotency_key=f"note-{secrets.token_hex(8)}")
        if status == 202:
            with app.lock:
                app.notification_targets += answer["targets"]

    def read(self, app):
        with app.lock:
            ids = list(app.activities)
        roll = self.rand()
        if roll < 0.4 and ids:
            self.api.call("read activity", "GET", f"/v1/apps/{app.id}/activities/{self.choice(ids)}", app.server_key)
        elif roll < 0.7 or not ids:
            self.api.call("list activities", "GET", f"/v1/apps/{app.id}/activities?limit=50", app.server_key)
        else:
            activity_id = self.choice(ids)
            if activity_id != FANOUT_ACTIVITY:
                self.api.call("list pushes", "GET", f"/v1/apps/{app.id}/activities/{activity_id}/pushes",
                              app.server_key)

    # MARK: Load

    def lane(self, rate, deadline):
        operations = [(10, "register device"), (6, "register push-to-start token"), (9, "start"), (30, "update"),
                      (8, "end"), (10, "notification"), (2, "end on device"), (12, "read"), (1, "healthz")]
        total = sum(weight for weight, _ in operations)
        due = time.monotonic()
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= deadline:
                return
            if due > now:
                time.sleep(min(due - now, deadline - now))
                continue
            due += 1 / rate
            app = self.choice(self.apps)
            pick = self.rand() * total
            for weight, operation in operations:
                pick -= weight
                if pick < 0:
                    break
            try:
                # Keep each app's running activities between 3 and 12.
                with app.lock:
                    running = len(app.running)
                if operation == "start" and running >= 12:
                    operation = "end"
                elif operation in ("update", "end") and running < 3:
                    operation = "start"
                if operation == "register device":
                    self.register_device(app)
                elif operation == "register push-to-start token":
                    self.register_start_token(app)
                elif operation == "start":
                    self.start_activity(app, deadline - now)
                elif operation == "update":
                    self.update_activity(app)
                elif operation == "end":
                    self.end_activity(app)
                elif operation == "notification":
                    self.notify(app)
                elif operation == "end on device":
                    self.end_on_device(app)
                elif operation == "read":
                    self.read(app)
                else:
                    self.api.call("healthz", "GET", "/healthz")
            except Exception as error:  # a bug of the run, reported; the load goes on
                self.harness_errors.append(f"{type(error).__name__}: {error}")

    def phone(self):
        """The simulated phone's app: for every activity a push-to-start started,
        registers the update token the device minted, as ActivityKit's
        pushTokenUpdates would hand it to the app."""
        while True:
            try:
                sim_activity, start_token = self.records.started.popleft()
            except IndexError:
                if self.stopping.is_set():
                    return
                time.sleep(0.05)
                continue
            try:
                status, body = self.sim_api.call("sim: read activity", "GET", f"/activities/{sim_activity}")
                if status != 200 or not body or not body.get("update_token"):
                    continue
                owner = self.by_start_token.get(start_token)
                activity_id = (body.get("attributes") or {}).get("islet_activity_id")
                if not owner or not activity_id:
                    continue
                app, device_id = owner
                status, _ = self.api.call(
                    "register update token", "PUT", f"/v1/apps/{app.id}/devices/{device_id}/activities/{activity_id}",
                    app.device_key, {"activity_type": ACTIVITY_TYPE, "token": body["update_token"]},
                    headers=self.secret_header(app, device_id))
                self.token_answers[(app.index, activity_id, device_id)] = status
                if status in (200, 201):
                    with app.lock:
                        activity = app.activities.get(activity_id)
                        if activity is not None:
                            activity.holders.add(device_id)
            except Exception as error:
                self.harness_errors.append(f"phone: {type(error).__name__}: {error}")

    def fanout_loop(self, deadline):
        """One update to the fan-out activity every minute, the first 30 s in."""
        round_number = 0
        next_at = self.t0 + 30
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= deadline:
                return
            if now < next_at:
                time.sleep(min(next_at, deadline) - now)
                continue
            round_number += 1
            app = self.apps[0]
            sent = time.monotonic()
            status, answer = self.api.call(
                "fan-out update", "POST", f"/v1/apps/{app.id}/activities/{FANOUT_ACTIVITY}/update", app.server_key,
                {"content_state": {"status": "live", "eta": round_number, "step": round_number, "round": round_number}},
                idempotency_key=f"fanout-{round_number}")
            if status == 202:
                self.fanout.targets["update"] += answer["targets"]
                self.fan_requests[round_number] = (sent, answer["targets"])
            next_at += 60

    def collector(self):
        while not self.stopping.is_set():
            try:
                if self.records.poll() < 500:
                    time.sleep(0.5)
            except Exception as error:
                self.harness_errors.append(f"collector: {type(error).__name__}: {error}")
                time.sleep(1)

    def sampler(self):
        while not self.stopping.is_set():
            self.sample()
            self.stopping.wait(SAMPLE_SECONDS)

    def sample(self):
        try:
            with open(f"/proc/{self.server.pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            rss = int(fields["VmRSS"].split()[0]) / 1024
            threads = int(fields["Threads"])
            files = len(os.listdir(f"/proc/{self.server.pid}/fd"))
            self.samples.append((time.monotonic() - self.t0, rss, threads, files))
            self.details.append((time.monotonic() - self.t0, self.thread_names(), self.file_kinds()))
        except (OSError, KeyError, ValueError):
            pass

    def read_status(self):
        """The server's resident memory (MB) and threads now."""
        try:
            with open(f"/proc/{self.server.pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            return None

    def thread_names(self):
        """The server's threads by name, to say which kind grew."""
        names = collections.Counter()
        for task in os.listdir(f"/proc/{self.server.pid}/task"):
            try:
                with open(f"/proc/{self.server.pid}/task/{task}/comm") as f:
                    names[f.read().strip()] += 1
            except OSError:
                pass
        return names

    def file_kinds(self):
        """The server's open files by kind (socket, pipe, anon_inode:…, or the path)."""
        kinds = collections.Counter()
        folder = f"/proc/{self.server.pid}/fd"
        for fd in os.listdir(folder):
            try:
                target = os.readlink(os.path.join(folder, fd))
            except OSError:
                continue
            kinds[re.sub(r"\[\d+\]$", "", target).rstrip(":")] += 1
        return kinds

    def metrics(self):
        status, raw = self.api.call("metrics", "GET", "/metrics", parse=False)
        if status != 200:
            return {}
        values = {}
        for line in raw.decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
        return values

    def progress(self, deadline):
        while not self.stopping.is_set():
            self.stopping.wait(30)
            if self.stopping.is_set() or time.monotonic() >= deadline:
                return
            m = self.metrics()
            sent = sum(v for k, v in m.items() if k.startswith('islet_pushes_total{result="sent"'))
            total = sum(v for (k, s), v in self.requests.snapshot().items() if isinstance(s, int))
            rss, threads = (self.samples[-1][1], self.samples[-1][2]) if self.samples else (0, 0)
            print(f"  {time.monotonic() - self.t0:5.0f} s: {total:,} requests, {sent:,.0f} pushes sent, "
                  f"queue {m.get('islet_push_queue_depth', 0):,.0f}, in flight {m.get('islet_push_in_flight', 0):,.0f}; "
                  f"server RSS {rss:.0f} MB, {threads} threads; sim saw {self.records.total:,}", flush=True)

    def load(self):
        seconds = self.args.seconds
        self.t0 = time.monotonic()
        deadline = self.t0 + seconds
        self.sample()
        threads = [threading.Thread(target=self.lane, args=(self.args.rate / self.args.lanes, deadline), daemon=True)
                   for _ in range(self.args.lanes)]
        threads.append(threading.Thread(target=self.fanout_loop, args=(deadline,), daemon=True))
        helpers = [threading.Thread(target=target, daemon=True) for target in (self.sampler, self.collector, self.phone)]
        helpers.append(threading.Thread(target=self.progress, args=(deadline,), daemon=True))
        for thread in threads + helpers:
            thread.start()
        self.helpers = helpers
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=1)
                if not self.server.alive():
                    raise HarnessError(f"islet serve exited during the load ({self.server.process.poll()})")
        # The fan-out activity ends with the load: one end to every holder.
        app = self.apps[0]
        status, answer = self.api.call("fan-out end", "POST", f"/v1/apps/{app.id}/activities/{FANOUT_ACTIVITY}/end",
                                       app.server_key, {}, idempotency_key="fanout-end")
        if status == 202:
            self.fanout.targets["end"] += answer["targets"]
            self.fan_requests["end"] = (time.monotonic(), answer["targets"])
        self.load_seconds = time.monotonic() - self.t0

    # MARK: Drain

    def drain(self):
        started = time.monotonic()
        # Scheduled ends still to come: the server ends them on its own.
        scheduled = [a for app in self.apps for a in app.activities.values() if a.scheduled]
        latest = max((a.end_at for a in scheduled), default=0)
        if latest > time.time():
            print(f"  waiting {latest - time.time():.0f} s for the last scheduled end", flush=True)
        wait_for(lambda: time.time() > latest + 1, latest - time.time() + 30, "the last scheduled end", 0.5)
        for activity in scheduled:
            app = activity.app

            def ended():
                status, body = self.api.call("read activity", "GET", f"/v1/apps/{app.id}/activities/{activity.id}",
                                             app.server_key)
                return status == 200 and body and body.get("status") == "ended"
            wait_for(ended, 60, f"scheduled end of {activity.id}", 0.5)
        # Then until nothing is queued or in flight, twice in a row.
        quiet = [0]
        last_print = [time.monotonic()]

        def drained():
            m = self.metrics()
            depth, flight = m.get("islet_push_queue_depth", -1), m.get("islet_push_in_flight", -1)
            quiet[0] = quiet[0] + 1 if depth == 0 and flight == 0 else 0
            if time.monotonic() - last_print[0] > 15:
                last_print[0] = time.monotonic()
                print(f"  draining: queue {depth:,.0f}, in flight {flight:,.0f}", flush=True)
            return quiet[0] >= 2
        wait_for(drained, self.args.drain_seconds, "the queue to drain", 1.0, alive=self.server.alive)
        # And until the simulator's records are all read.
        self.stopping.set()
        for thread in self.helpers:
            thread.join(timeout=30)
        while self.records.poll() > 0:
            pass
        self.drain_seconds = time.monotonic() - started

    # MARK: Accounting

    def account(self):
        """Everything the server and the simulator say about the pushes."""
        listing = {}  # apns-id → push item
        per_activity = []
        for app in self.apps:
            for activity in app.activities.values():
                status, body = self.api.call("list pushes", "GET", f"/v1/apps/{app.id}/activities/{activity.id}/pushes",
                                             app.server_key)
                if status != 200:
                    raise HarnessError(f"cannot list the pushes of {activity.id}: {status}")
                items = body["items"]
                per_activity.append((activity, items))
                for item in items:
                    listing[item["apns_id"].lower()] = item
        metrics = self.metrics()
        return listing, per_activity, metrics

    def device_states(self):
        """Activities the simulated devices still show although the server ended
        that device's copy (for a cause other than the device's own end), each with
        what its update token's registration was answered."""
        status, body = self.sim_api.call("sim: read activities", "GET", "/activities")
        if status != 200:
            raise HarnessError(f"cannot read the simulator's activities: {status}")
        details = {}
        running_after_end = collections.Counter()
        examples = []
        for sim in body.get("activities", []):
            if sim.get("origin") != "push_to_start" or sim.get("status") not in ("active", "stale"):
                continue
            owner = self.by_start_token.get(sim.get("push_to_start_token"))
            activity_id = (sim.get("attributes") or {}).get("islet_activity_id")
            if not owner or not activity_id:
                continue
            app, device_id = owner
            if (app.id, activity_id) not in details:
                st, detail = self.api.call("read activity", "GET", f"/v1/apps/{app.id}/activities/{activity_id}",
                                           app.server_key)
                details[(app.id, activity_id)] = detail if st == 200 else {}
            copies = {c["device_id"]: c for c in details[(app.id, activity_id)].get("devices", [])}
            copy = copies.get(device_id)
            if not copy or copy.get("status") != "ended" or copy.get("end_cause") in ("device", "token_rejected"):
                continue
            answer = self.token_answers.get((app.index, activity_id, device_id))
            if answer == 409:
                why = "its update token came after the end (registration answered 409)"
            elif answer in (200, 201):
                why = "its update token was registered before the end: the end never reached it"
            else:
                why = "its update token was never registered"
            running_after_end[why] += 1
            if len(examples) < 5:
                examples.append(f"app {app.index} {activity_id} on {device_id}: {why}; server copy {copy}")
        return running_after_end, examples

    def read_database(self):
        """The server's own table of pushes, read once it has stopped."""
        db = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT app_id, activity_id, event, status, reason, apns_id, attempts, apns_status FROM pushes").fetchall()
            # A send to an activity's copies (or a start to the copies it made) has a
            # row only for a copy whose push differed: the others are its
            # audience's copies without one.
            self.window_pushes = db.execute(
                """
                SELECT count(*) FROM sends s JOIN activity_instances i
                    ON i.app_id = s.app_id AND i.activity_id = s.activity_id
                LEFT JOIN devices d ON d.app_id = i.app_id AND d.device_id = i.device_id
                WHERE s.audience = 'copies' AND i.created_at <= s.created_at
                    AND (i.status != 'ended' OR i.ended_at >= s.created_at)
                    AND CASE WHEN s.token_kind = 'push_to_start' THEN i.start_send_id = s.id
                        WHEN s.token_kind = 'fcm'
                        THEN i.update_token IS NULL AND d.platform = 'android' AND d.fcm_token IS NOT NULL
                            AND (d.unreachable_at IS NULL OR d.unreachable_at >= s.created_at)
                            AND (s.event != 'start' OR i.start_send_id = s.id)
                        ELSE i.update_token IS NOT NULL END
                    AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id AND p.device_id = i.device_id)
                """).fetchone()[0]
        finally:
            db.close()
        return [dict(zip(("app_id", "activity_id", "event", "status", "reason", "apns_id", "attempts", "apns_status"),
                         row)) for row in rows]

    def stop_all(self):
        codes = {}
        for child in reversed(self.children):
            codes[child.name] = child.stop()
        self.children = []
        return codes


# MARK: - Report

def regression_slope(points):
    """Least-squares slope of (x, y) points."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def table(title, rows, widths=(58, 14)):
    print(f"\n{title}")
    print("  " + "-" * (widths[0] + widths[1] + 1))
    for row in rows:
        if row is None:
            print("  " + "-" * (widths[0] + widths[1] + 1))
            continue
        name, value = row
        shown = f"{value:,}" if isinstance(value, int) else str(value)
        print(f"  {name:<{widths[0]}} {shown:>{widths[1]}}")


def report(soak, listing, per_activity, metrics, database, exit_codes, device_states):
    failures = []
    args = soak.args

    # Requests by kind.
    requests = soak.requests.snapshot()
    kinds = collections.OrderedDict()
    for (kind, status), count in sorted(requests.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        kinds.setdefault(kind, collections.Counter())[status] += count
    rows = []
    for kind, statuses in kinds.items():
        answered = sum(v for s, v in statuses.items() if isinstance(s, int))
        detail = ", ".join(f"{s}: {v:,}" for s, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))
        rows.append((f"{kind} ({detail})", answered))
    total_requests = sum(v for (k, s), v in requests.items() if isinstance(s, int))
    rows += [None, ("total", total_requests),
             ("over the load, per second", f"{sum(v for (k, s), v in requests.items() if isinstance(s, int) and not k.startswith('sim')) / max(1, soak.load_seconds + soak.setup_seconds):.1f}")]
    table(f"Requests made ({soak.load_seconds:.0f} s of load after {soak.setup_seconds:.0f} s of set-up; "
          f"drained in {soak.drain_seconds:.0f} s)", rows)

    # The pushes the API promised: the targets of every 202, by event.
    promised = collections.Counter()
    for app in soak.apps:
        for activity in app.activities.values():
            for event, n in activity.targets.items():
                promised[("fan-out " if activity.id == FANOUT_ACTIVITY else "") + event] += n
        promised["notification"] += app.notification_targets
    scheduled_end_pushes = 0
    mismatched = []
    for activity, items in per_activity:
        by_event = collections.Counter(item["event"] for item in items)
        for event in ("start", "update", "end"):
            expected = activity.targets[event]
            got = by_event[event]
            if event == "end" and activity.scheduled and activity.targets["end"] == 0:
                scheduled_end_pushes += got
                continue
            if got != expected:
                mismatched.append(f"{activity.app.index}/{activity.id} {event}: the API answered {expected} targets, "
                                  f"the listing holds {got}")
    in_database = sum(1 for row in database if row["activity_id"] is not None) + getattr(soak, "window_pushes", 0)
    if in_database != len(listing):
        mismatched.append(f"the database holds {in_database} activity pushes, the listings {len(listing)}")
    activity_statuses = collections.Counter((item["status"], item.get("reason") or "") for item in listing.values())
    notifications = [row for row in database if row["activity_id"] is None]
    notification_statuses = collections.Counter((row["status"], row["reason"] or "") for row in notifications)
    promised_total = sum(promised.values()) + scheduled_end_pushes
    listed_total = len(listing) + len(notifications)

    statuses = activity_statuses + notification_statuses
    queued_left = sum(v for (s, _), v in statuses.items() if s in ("queued", "sending"))
    settled = collections.Counter()
    for (status, reason), count in statuses.items():
        settled[status] += count
    unaccounted = promised_total - (settled["sent"] + settled["failed"] + settled["dropped"])
    no_reason = sum(v for (s, r), v in statuses.items() if s in ("failed", "dropped") and not r)

    # Every push the server says it sent was answered 200 by the simulator; every
    # push the simulator delivered is one the server knows of, recorded as sent.
    records = soak.records
    server_ids = {**{row["apns_id"].lower(): row for row in notifications}, **listing}
    sent_ids = {i for i, item in server_ids.items() if item["status"] == "sent"}
    delivered_ids = {i for i, attempts in records.by_id.items() if any(a[0] == 200 for a in attempts)}
    sent_not_delivered = sent_ids - delivered_ids
    delivered_not_sent = {i for i in delivered_ids if i in server_ids and i not in sent_ids}
    unknown_at_server = {i for i in records.by_id if i not in server_ids}
    failed_never_tried = {i for i, item in server_ids.items() if item["status"] == "failed" and i not in records.by_id}
    twice = sum(1 for i in delivered_ids if sum(1 for a in records.by_id[i] if a[0] == 200) > 1)
    lost = unaccounted + queued_left + len(sent_not_delivered) + len(mismatched)

    rows = [(f"queued: targets of the API's 202 answers", sum(promised.values()))]
    for name, n in sorted(promised.items()):
        rows.append((f"  {name}", n))
    rows.append(("  scheduled ends (end_at), from the listings", scheduled_end_pushes))
    rows += [(f"in the server's records (listings {len(listing):,} + notifications {len(notifications):,})",
              listed_total), None]
    for status in ("sent", "failed", "dropped"):
        rows.append((status, settled[status]))
        for (s, reason), count in sorted(statuses.items()):
            if s == status and status != "sent":
                rows.append((f"  {reason or '(no reason)'}", count))
    rows += [("still queued or in flight", queued_left), None,
             ("sent, but never answered 200 by the simulator", len(sent_not_delivered)),
             ("per-activity count differs from the API's answers", len(mismatched)),
             ("unaccounted (queued − sent − failed − dropped)", unaccounted),
             ("LOST", lost), None,
             ("failed or dropped without a reason", no_reason),
             ("answered 200 by the simulator, recorded otherwise", len(delivered_not_sent)),
             ("failed without ever reaching the simulator", len(failed_never_tried)),
             ("apns-ids the server does not know of", len(unknown_at_server)),
             ("delivered twice (two 200s for one apns-id)", twice)]
    table("Pushes (the server's listings, its database for notifications, and /metrics)", rows)
    if lost:
        failures.append(f"{lost} push(es) lost")
        for line in mismatched[:10]:
            print(f"    {line}")
        for i in list(sent_not_delivered)[:10]:
            print(f"    sent but not delivered: {i} {server_ids[i]}")
    if no_reason:
        failures.append(f"{no_reason} push(es) failed or dropped without a reason")
    if delivered_not_sent:
        failures.append(f"{len(delivered_not_sent)} push(es) delivered but recorded as failed or dropped")
        for i in list(delivered_not_sent)[:10]:
            print(f"    delivered, recorded otherwise: {i} {server_ids[i]} sim: {records.by_id[i]}")
    if unknown_at_server:
        failures.append(f"{len(unknown_at_server)} push(es) at the simulator that the server does not know of")

    # /metrics against the records. Drops by the API (Superseded, and ActivityEnded
    # for a start still queued when its activity ended) are not counted there; the
    # worker's own drops (ActivityEnded, for a retry of an activity that ended) are.
    metric = collections.Counter()
    for name, value in metrics.items():
        match = re.match(r'islet_pushes_total\{result="(\w+)",reason="([^"]*)"(?:,[^}]*)?\}', name)
        if match:
            metric[(match.group(1), match.group(2))] += int(value)
    metric_by_result = collections.Counter()
    for (result, _), v in metric.items():
        metric_by_result[result] += v
    rows = [(f"islet_pushes_total{{result={result}}}", metric_by_result[result])
            for result in ("sent", "failed", "dropped", "retried", "switched")]
    for (result, reason), v in sorted(metric.items()):
        if result in ("failed", "retried", "switched", "dropped") and reason:
            rows.append((f"  {result} {reason}", v))
    api_dropped = settled["dropped"] - metric_by_result["dropped"]
    checks = [("sent: metrics = records", metric_by_result["sent"], settled["sent"]),
              ("failed: metrics = records", metric_by_result["failed"], settled["failed"])]
    rows.append(None)
    for name, a, b in checks:
        rows.append((f"{name} ({a:,} vs {b:,})", "ok" if a == b else "DIFFERENT"))
        if a != b:
            failures.append(f"/metrics and the records disagree: {name} ({a} vs {b})")
    rows.append((f"dropped by the API (records − metrics)", api_dropped))
    rows.append(("islet_push_queue_depth / islet_push_in_flight at the end",
                 f"{metrics.get('islet_push_queue_depth', -1):.0f} / {metrics.get('islet_push_in_flight', -1):.0f}"))
    attempts = sum(item["attempts"] for item in server_ids.values())
    rows.append(("attempts the server recorded", attempts))
    table("/metrics", rows)

    # What the simulator received.
    rows = [("requests received (every attempt)", records.total),
            ("distinct apns-ids", len(records.by_id)),
            ("apns-ids sent more than once (retries)", sum(1 for a in records.by_id.values() if len(a) > 1)),
            ("connections (each closed by GOAWAY after "
             f"{args.goaway_after} streams)", len(records.connections)),
            ("records missed by the reader (history overflow)", records.gaps), None]
    for (status, reason, injected), count in sorted(records.statuses.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        label = f"{status} {reason}".strip() + (" (injected fault)" if injected else "")
        rows.append((label, count))
    rows.append(None)
    for (push_type, outcome, note), count in sorted(records.outcomes.items(), key=lambda kv: str(kv[0])):
        rows.append((f"200 {push_type} → {outcome}" + (f": {note[:60]}" if note else ""), count))
    table("What the simulator received (its inspection API)", rows, widths=(92, 10))
    if records.gaps:
        failures.append(f"the simulator's records were read with {records.gaps} missing")

    # What the simulated devices show at the end, against the server's copies.
    running_after_end, examples = device_states
    rows = [("activities a device shows after the server ended its copy", sum(running_after_end.values()))]
    rows += [(f"  {why}", n) for why, n in sorted(running_after_end.items())]
    table("The simulated devices against the server", rows, widths=(92, 10))
    for line in examples:
        print(f"    {line[:300]}")
    lost_ends = sum(n for why, n in running_after_end.items() if "never reached" in why)
    if lost_ends:
        failures.append(f"{lost_ends} end(s) never reached a device that held a registered update token")

    # The fan-outs.
    rows = []
    for key, (sent_at, targets) in sorted(soak.fan_requests.items(), key=lambda kv: str(kv[0]).zfill(4)):
        entry = records.fan_rounds.get(key)
        seen = len(entry["seen"]) if entry else 0
        took = f"{entry['last'] - sent_at:.1f} s" if entry and entry["last"] and seen else "-"
        rows.append((f"{'end' if key == 'end' else f'round {key}'}: {targets:,} targets, {seen:,} delivered", took))
    table(f"Fan-outs to {args.fanout:,} devices (time to the last delivery)", rows)

    # Memory, threads and open files of the server.
    samples = soak.samples
    reference_time = min(60.0, soak.args.seconds / 3)
    after = [s for s in samples if s[0] >= reference_time]
    rows = []
    verdicts = []
    if len(after) >= 2:
        ref = after[0]
        later = after[1:]
        end = samples[-1]
        for index, name, unit, allowance in ((1, "resident memory (VmRSS)", "MB", None), (2, "threads", "", 2),
                                             (3, "open files", "", 8)):
            first, peak, last = ref[index], max(s[index] for s in later), end[index]
            slope = regression_slope([(s[0] / 60, s[index]) for s in after])
            late = [s for s in after if s[0] >= (after[0][0] + end[0]) / 2]
            late_slope = regression_slope([(s[0] / 60, s[index]) for s in late])
            if allowance is None:
                # Memory: glibc's allocator keeps what it freed in one arena per
                # thread (about 40 here), so resident memory climbs for a while
                # after the first minute and flattens; a leak keeps climbing at the
                # rate of the load. Flat: the end and the peak at most 25% (and
                # 16 MB) above the first minute's, and the second half's slope under
                # 1 MB a minute.
                bound = first + max(16.0, 0.25 * first)
                end_ok = last <= bound and late_slope < 1.0
                peak_ok = peak <= bound
                limit = f"max, end ≤ {bound:.0f} MB, second half < 1 MB/min"
                shown = lambda v: f"{v:.1f} MB"
            else:
                end_ok = last <= first + allowance
                peak_ok = peak <= first + 2 * allowance
                limit = f"end ≤ {first + allowance:.0f}, max ≤ {first + 2 * allowance:.0f}"
                shown = lambda v: f"{v:.0f}"
            verdict = "flat" if end_ok and peak_ok else "GROWING"
            if soak.args.seconds < 180:
                # The first minute is warm-up; a shorter run shows nothing after it.
                verdict = "not judged (under 3 minutes)"
            verdicts.append((name, verdict))
            rows += [(f"{name}: at {ref[0]:.0f} s (first minute)", shown(first)),
                     (f"  max after", shown(peak)), (f"  at the end ({end[0]:.0f} s)", shown(last)),
                     (f"  slope after the first minute, per minute", f"{slope:+.2f}{' MB' if unit else ''}"),
                     (f"  slope over the second half, per minute", f"{late_slope:+.2f}{' MB' if unit else ''}"),
                     (f"  verdict ({limit})", verdict)]
            if verdict == "GROWING":
                failures.append(f"the server's {name} grew: {shown(first)} → max {shown(peak)}, end {shown(last)}")
        rows.append(("samples (every ~10 s)", len(samples)))
        if soak.after_accounting:
            rows.append(("RSS after the accounting's reads (not judged)", f"{soak.after_accounting[0]:.1f} MB"))
    else:
        rows.append(("too few samples to judge", len(samples)))
        failures.append("too few memory samples to judge")
    table(f"islet serve (pid {soak.server.pid}): memory, threads and open files", rows)
    if len(after) >= 2:
        reference = next(d for d in soak.details if d[0] >= after[0][0])
        last = soak.details[-1]
        for label, index in (("threads", 1), ("open files", 2)):
            changes = [(name, last[index][name] - reference[index][name])
                       for name in sorted(set(last[index]) | set(reference[index]))
                       if last[index][name] != reference[index][name]]
            shown = ", ".join(f"{name} {change:+d}" for name, change in changes) or "none"
            print(f"  {label} from {reference[0]:.0f} s to {last[0]:.0f} s, by kind: {shown}")
        print(f"  threads at the end: {', '.join(f'{n} {c}' for n, c in last[1].most_common())}")
        print(f"  open files at the end: {', '.join(f'{n} {c}' for n, c in last[2].most_common(8))}")
    series = " ".join(f"{s[1]:.0f}" for s in samples)
    print(f"  RSS series (MB, every ~10 s): {series}")
    print(f"  threads series: {' '.join(str(s[2]) for s in samples)}")

    # The server's warnings and errors.
    explained = [(level, line) for level, line in soak.server_lines if FAULT_PATTERNS.search(line)]
    unexplained = [(level, line) for level, line in soak.server_lines if not FAULT_PATTERNS.search(line)]
    rows = [("warning and error lines logged", len(soak.server_lines)),
            ("  caused by an injected fault", len(explained)),
            ("  unexplained", len(unexplained))]
    table("The server's log (warning and error lines)", rows)
    for level, line in explained[:20]:
        print(f"    fault:       {line[:200]}")
    for level, line in unexplained[:40]:
        print(f"    UNEXPLAINED: {line[:300]}")
    if unexplained:
        failures.append(f"{len(unexplained)} unexplained warning or error line(s) in the server's log")

    # Everything else that would make the figures wrong.
    rows = [("answers a request of its kind should not get", len(soak.unexpected)),
            ("errors of the run itself", len(soak.harness_errors)),
            ("islet serve's exit status after SIGTERM", exit_codes.get("islet serve")),
            ("islet sim's exit status after SIGTERM", exit_codes.get("islet sim"))]
    table("The run", rows)
    for line in soak.unexpected[:20]:
        print(f"    unexpected: {line[:300]}")
    for line in soak.harness_errors[:20]:
        print(f"    run error: {line[:300]}")
    if soak.unexpected:
        failures.append(f"{len(soak.unexpected)} unexpected answer(s)")
    if soak.harness_errors:
        failures.append(f"{len(soak.harness_errors)} error(s) in the run itself")
    if exit_codes.get("islet serve") != 0:
        failures.append(f"islet serve exited {exit_codes.get('islet serve')} after SIGTERM")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 600)),
                        help="duration of the load (default $SOAK_SECONDS or 600)")
    parser.add_argument("--apps", type=int, default=20)
    parser.add_argument("--fanout", type=int, default=2000, help="devices holding the fan-out activity")
    parser.add_argument("--rate", type=float, default=30, help="API operations a second, over all lanes")
    parser.add_argument("--lanes", type=int, default=4, help="threads sending the load")
    parser.add_argument("--users", type=int, default=30, help="users per app")
    parser.add_argument("--initial-devices", type=int, default=8, help="devices per app before the load")
    parser.add_argument("--stale-share", type=float, default=0.05,
                        help="share of tokens the simulator holds for the other environment")
    parser.add_argument("--fail-rate", type=float, default=0.2, help="share of pushes the simulator answers 503")
    parser.add_argument("--goaway-after", type=int, default=500, help="streams per connection before GOAWAY")
    parser.add_argument("--latency-ms", type=int, default=20, help="delay of every simulator answer")
    parser.add_argument("--drain-seconds", type=float, default=900, help="longest wait for the queue to drain")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, database)")
    args = parser.parse_args()
    if not os.access(ISLET, os.X_OK):
        print(f"soak: {ISLET} is missing; build it with `swift build -c release --product islet`", file=sys.stderr)
        return 2

    def stop_signal(number, frame):
        raise Stop(signal.Signals(number).name)
    signal.signal(signal.SIGTERM, stop_signal)
    signal.signal(signal.SIGHUP, stop_signal)
    # Started in the background by a shell, the run inherits SIGINT ignored:
    # Ctrl-C (or kill -INT) must still stop it and what it started.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    work = tempfile.mkdtemp(prefix="islet-soak-")
    soak = Soak(args, work)
    failures = None
    exit_codes = {}
    try:
        print(f"soak: {args.seconds:.0f} s over {args.apps} apps, fan-out to {args.fanout:,} devices every minute, "
              f"{args.rate:g} operations a second; work folder {work}", flush=True)
        started = time.monotonic()
        print("[1/5] islet sim and islet serve", flush=True)
        soak.start_processes()
        print("[2/5] apps, devices and the fan-out activity", flush=True)
        soak.create_apps()
        soak.setup_fanout()
        soak.setup_seconds = time.monotonic() - started
        print(f"      {len(soak.apps)} apps, {args.fanout:,} fan-out devices ({soak.setup_seconds:.0f} s)", flush=True)
        print(f"[3/5] load for {args.seconds:.0f} s", flush=True)
        soak.load()
        print("[4/5] draining", flush=True)
        soak.drain()
        print(f"      drained in {soak.drain_seconds:.0f} s", flush=True)
        print("[5/5] accounting", flush=True)
        soak.sample()  # the end of the load and the drain: the last sample judged
        listing, per_activity, metrics = soak.account()
        device_states = soak.device_states()
        soak.after_accounting = soak.read_status()
        exit_codes = soak.stop_all()
        database = soak.read_database()
        failures = report(soak, listing, per_activity, metrics, database, exit_codes, device_states)
    except (KeyboardInterrupt, Stop) as stop:
        print(f"\nsoak: stopped ({str(stop) or 'SIGINT'}); stopping what it started", file=sys.stderr)
        return 130
    except HarnessError as error:
        print(f"\nsoak: the run could not be made: {error}", file=sys.stderr)
        for child in soak.children:
            for line in list(child.lines)[-10:]:
                print(f"  {child.name}: {line[:300]}", file=sys.stderr)
        failures = None
        return 2
    finally:
        soak.stopping.set()
        # Ctrl-C again while stopping must not leave a process behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        soak.stop_all()
        if failures == [] and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"\nsoak: logs and database kept in {work}", file=sys.stderr)
    if failures:
        print("\nsoak: FAILED")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print("\nsoak: passed (nothing lost; memory, threads and files flat; no unexplained error)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

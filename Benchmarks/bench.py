#!/usr/bin/env python3
"""Islet's benchmarks, side by side with the limit and with peers (`make bench`).

Every figure is a ratio against a reference measured in the same run on the same
machine: these machines are shared and noisy, so absolute numbers mean little.

Measures: (1) the APNs client against `islet sim` beside h2load (the limit) and
aioapns (a peer); (2) `islet sim` beside nghttpd; (3) one update fanned out to N
devices end to end, beside h2load sending the same push to the same simulator and
tokens (the wire), and the SQLite database's growth per push; (4) the API under wrk, and latency at half the maximum rate;
(5) the server's memory with many registered tokens and during a fan-out; (6)
recovery from SIGKILL in the middle of a fan-out; (7) PostgreSQL beside SQLite:
registration rate and p99, fan-out, SIGKILL recovery, and two nodes beside one;
(8) schedules: 100,000 timeline entries due in one minute, how late they fire, and
the server's memory with a million pending; (9) webhooks; (10) retention: the
database's size under fan-outs with a history kept a couple of minutes.

Writes bench/results/results.json, bench/results/report.md and PNG plots; a full
run also adds a line to bench/results/history.jsonl (kept in the repository), and
every run shows each figure beside the previous full run's.
Usage: bench.py [--quick] [--only STEP,…]
"""
import argparse
import base64
import bisect
import glob
import http.client as httpclient
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISLET = os.path.join(ROOT, ".build/release/islet")
BENCH = os.path.join(ROOT, ".build/release/islet-bench")
RESULTS = os.path.join(ROOT, "bench/results")
KEY_ID, TEAM_ID = "BENCHKEY01", "BENCHTEAM1"
ADMIN = "bench-admin-token-0123456789"
# The secrets key of the servers on PostgreSQL, which need one (SQLite makes its own).
SECRETS_KEY = base64.b64encode(os.urandom(32)).decode()


class Progress:
    """One line per step, with its duration, so a long run shows where it is."""

    def __init__(self, total):
        self.total, self.index, self.started = total, 0, time.time()

    def step(self, text):
        self.index += 1
        self.step_started = time.time()
        print(f"[{self.index}/{self.total}] {text} …", flush=True)

    def note(self, text):
        print(f"      {text}  ({time.time() - self.step_started:.1f} s)", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def run(cmd, timeout=900):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({out.returncode}): {out.stderr[-800:]}")
    return out.stdout


def kv(text):
    """`key=value` pairs, several to a line or one per line."""
    return dict(word.split("=", 1) for word in text.split() if "=" in word)


def median(values):
    return statistics.median(values) if values else 0


def http(method, port, path, key=None, body=None, headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode())
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        data = response.read()
        return json.loads(data) if data else None


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Rig:
    """Keys, certificates, an `islet sim` process and helpers shared by the steps."""

    def __init__(self, work):
        self.work = work
        self.key = os.path.join(work, "AuthKey.p8")
        self.cert = os.path.join(work, "server.pem")
        self.cert_key = os.path.join(work, "server.key")
        run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.key])
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", self.cert_key, "-out", self.cert, "-days", "2", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        self.processes = []
        self.sim_port = free_port()
        self.spawn([ISLET, "sim", "--quiet", "--port", str(self.sim_port), "--inspect-port", "0", "--cert", self.cert,
                    "--key", self.cert_key, "--trust", f"{KEY_ID}:{TEAM_ID}:{self.key}"])
        wait_port(self.sim_port)
        self.jwt = run([ISLET, "jwt", "--key", self.key, "--key-id", KEY_ID, "--team-id", TEAM_ID]).strip()
        self.body = os.path.join(work, "body.json")
        with open(self.body, "w") as f:
            f.write('{"aps":{"alert":{"title":"Order","body":"On its way"}}}')

    def spawn(self, cmd, **kwargs):
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
        self.processes.append(process)
        return process

    def h2load(self, port, connections, requests):
        out = run(["h2load", "-n", str(requests), "-c", str(connections), "-m", "100", "-d", self.body,
                   "-H", f"authorization: bearer {self.jwt}", "-H", "apns-topic: com.example.app",
                   "-H", "apns-push-type: alert", f"https://127.0.0.1:{port}/3/device/{'ab' * 32}"])
        match = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out)
        return float(match.group(1)) if match else 0.0

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def transport(rig, quick, results, progress):
    pushes = 50_000 if quick else 200_000
    # The machine is shared: the client and h2load take turns, round after round,
    # and the medians are compared. aioapns, a hundred times slower, runs once.
    rounds = 1 if quick else 5
    python = sys.executable
    table = {}
    for connections in (1, 4):
        islet, limit = [], []
        for _ in range(rounds):
            out = kv(run([BENCH, "apns-client", "--url", f"https://localhost:{rig.sim_port}", "--ca", rig.cert,
                          "--key", rig.key, "--key-id", KEY_ID, "--team-id", TEAM_ID, "--connections",
                          str(connections), "--count", str(pushes), "--concurrency", "1000"]))
            islet.append(float(out["pushes_per_second"]))
            limit.append(rig.h2load(rig.sim_port, connections, pushes))
        out = kv(run([python, os.path.join(ROOT, "Benchmarks/aioapns_peer.py"), "localhost", str(rig.sim_port),
                      rig.cert, rig.key, KEY_ID, TEAM_ID, str(connections), str(pushes // 10), "1000"]))
        peer = float(out["pushes_per_second"])
        row = {"islet": median(islet), "h2load": median(limit), "aioapns": peer,
               "islet_rounds": islet, "h2load_rounds": limit}
        row["islet_over_h2load"] = row["islet"] / row["h2load"] if row["h2load"] else 0
        row["islet_over_aioapns"] = row["islet"] / row["aioapns"] if row["aioapns"] else 0
        table[str(connections)] = row
        progress.note(f"{connections} connection(s): islet {row['islet']:.0f}/s, h2load {row['h2load']:.0f}/s, "
                      f"aioapns {row['aioapns']:.0f}/s; rounds islet {' '.join(f'{x / 1000:.0f}k' for x in islet)}, "
                      f"h2load {' '.join(f'{x / 1000:.0f}k' for x in limit)}")
    # The client's memory over a long run: resident size a tenth of the way in and
    # at the end.
    long_run = 200_000 if quick else 1_000_000
    out = kv(run([BENCH, "apns-client", "--url", f"https://localhost:{rig.sim_port}", "--ca", rig.cert,
                  "--key", rig.key, "--key-id", KEY_ID, "--team-id", TEAM_ID, "--connections", "4",
                  "--count", str(long_run), "--concurrency", "1000"]))
    table["memory"] = {"pushes": long_run, "rss_tenth_mb": float(out["rss_tenth_mb"]),
                       "rss_end_mb": float(out["rss_end_mb"])}
    progress.note(f"client RSS over {long_run:,} pushes: {table['memory']['rss_tenth_mb']:.0f} MB after a tenth, "
                  f"{table['memory']['rss_end_mb']:.0f} MB at the end")
    results["transport"] = table


def simulator(rig, quick, results, progress):
    requests = 50_000 if quick else 200_000
    rounds = 1 if quick else 5
    docroot = os.path.join(rig.work, "docroot")
    os.makedirs(docroot, exist_ok=True)
    nghttpd_port = free_port()
    rig.spawn(["nghttpd", "-d", docroot, str(nghttpd_port), rig.cert_key, rig.cert])
    wait_port(nghttpd_port)
    table = {}
    for connections in (1, 4):
        base, sim = [], []
        for _ in range(rounds):
            base.append(rig.h2load(nghttpd_port, connections, requests))
            sim.append(rig.h2load(rig.sim_port, connections, requests))
        row = {"nghttpd": median(base), "islet_sim": median(sim), "nghttpd_rounds": base, "islet_sim_rounds": sim}
        row["sim_over_nghttpd"] = row["islet_sim"] / row["nghttpd"] if row["nghttpd"] else 0
        table[str(connections)] = row
        progress.note(f"{connections} connection(s): islet sim {row['islet_sim']:.0f}/s, nghttpd {row['nghttpd']:.0f}/s; "
                      f"rounds islet sim {' '.join(f'{x / 1000:.0f}k' for x in sim)}, "
                      f"nghttpd {' '.join(f'{x / 1000:.0f}k' for x in base)}")
    results["simulator"] = table


def fanout(quick, results, progress):
    # The million's tokens are written straight into the database (registering them
    # through the API would take the whole run).
    sizes = [10_000] if quick else [10_000, 100_000, 1_000_000]
    table = {}
    for devices in sizes:
        populate = ["--populate"] if devices >= 1_000_000 else []
        # The wire reference: h2load sends the fan-out's own push to the same
        # simulator, once to each of its tokens; the two take turns, and the ratio
        # is of the medians. The database is measured before and after (SQLite).
        rounds = 1 if quick else 3 if devices >= 1_000_000 else 5
        out = kv(run([BENCH, "fanout", "--islet", ISLET, "--devices", str(devices), "--connections", "8",
                      "--wire-rounds", str(rounds), "--database-growth"] + populate, timeout=3600))
        row = {key: [float(x) for x in value.split(",")] if key.endswith("_rounds") else float(value)
               for key, value in out.items() if key not in ("finished", "db_rows_added_by_table")}
        # Where the rows went: "pushes:10000,events:10000".
        row["db_rows_added_by_table"] = {name: int(count) for name, count in
                                         (part.split(":") for part in out.get("db_rows_added_by_table", "").split(",")
                                          if part)}
        row["finished"] = out.get("finished") == "true"
        # Beside figure 1, when this run measured it.
        transport_1 = results.get("transport", {}).get("1", {}).get("islet", 0)
        if transport_1:
            row["over_transport"] = row["fanout_pushes_per_second"] / transport_1
        table[str(devices)] = row
        progress.note(f"{devices} devices: {row['fanout_pushes_per_second']:.0f} pushes/s end to end, "
                      f"server peak RSS {row['server_peak_rss_mb']:.0f} MB; fan-out ÷ wire {row['fanout_over_wire']:.2f} "
                      f"(rounds fan-out {' '.join(f'{x / 1000:.1f}k' for x in row['fanout_rounds'])}, "
                      f"h2load {' '.join(f'{x / 1000:.1f}k' for x in row['wire_rounds'])}); "
                      f"database {row['db_bytes_per_push']:.0f} bytes and {row['rows_added_per_push']:.2f} rows per push")
    results["fanout"] = table


def broadcast(quick, results, progress):
    # The same update to an activity on a broadcast channel with a million phones
    # subscribed, and to one held by 100,000 devices on their own tokens, on one
    # server and simulator: timed until every phone shows the new state.
    subscribers, holders = (100_000, 10_000) if quick else (1_000_000, 100_000)
    out = kv(run([BENCH, "broadcast", "--islet", ISLET, "--subscribers", str(subscribers), "--holders", str(holders)],
                 timeout=1800))
    row = {key: float(value) for key, value in out.items() if not key.endswith("finished")}
    row["finished"] = out.get("tokens_finished") == "true" and out.get("channel_finished") == "true"
    row["tokens_over_channel_seconds"] = row["tokens_seconds"] / row["channel_seconds"] if row["channel_seconds"] else 0
    row["tokens_over_channel_cpu"] = (row["tokens_server_cpu_seconds"] / row["channel_server_cpu_seconds"]
                                      if row["channel_server_cpu_seconds"] else 0)
    results["broadcast"] = row
    progress.note(f"{subscribers:,} channel subscribers in {row['channel_seconds']:.2f} s with "
                  f"{row['channel_pushes']:.0f} push; {holders:,} token holders in {row['tokens_seconds']:.2f} s "
                  f"with {row['tokens_pushes']:.0f} pushes")


def retention(quick, results, progress):
    # A server keeping its history (and its events, one per push sent) a couple of
    # minutes, under fan-outs for several times that: the database's size (the
    # SQLite file and its WAL) over time, flat once the retention and three purges
    # have passed. In islet-bench's process: the flag takes an hour at least.
    minutes, seconds, devices = (1, 300, 200) if quick else (2, 720, 500)
    out = run([BENCH, "retention", "--minutes", str(minutes), "--seconds", str(seconds), "--devices", str(devices)],
              timeout=seconds + 900)
    lines = out.splitlines()
    row = {key: float(value) for key, value in kv("\n".join(l for l in lines if not l.startswith("sample "))).items()}
    row["samples"] = [{key: float(value) for key, value in kv(l).items()} for l in lines if l.startswith("sample ")]
    row["growth_after_window"] = row["size_end_mb"] / row["size_at_window_mb"] if row["size_at_window_mb"] else 0
    results["retention"] = row
    progress.note(f"{row['pushes_answered']:,.0f} pushes to {devices} devices in {seconds} s, history kept {minutes} min: "
                  f"{row['size_at_window_mb']:.0f} MB once the window passed, {row['size_end_mb']:.0f} MB at the end")


def wrk(port, seconds, script=None, path="/"):
    cmd = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    out = run(cmd + [f"http://127.0.0.1:{port}{path}"])

    def ms(label):
        match = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)", out, re.M)
        if not match:
            return 0.0
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": ms("50"), "p99_ms": ms("99"), "non_2xx": int(errors.group(1)) if errors else 0}


class Server:
    """`islet serve` as a process, sending to the rig's simulator; on SQLite in
    `data`, or on the PostgreSQL `database` URL."""

    def __init__(self, rig, data, database=None, extra=()):
        # On PostgreSQL, a pool of twice the cores: on this 2-core machine 8
        # connections (the default) register about a fifth slower than 4, each
        # round trip a context switch more between islet and the server's backends.
        pool = ["--database-pool-size", str(POOL)] if database else []
        self.port = free_port()
        self.process = subprocess.Popen(
            [ISLET, "serve", "--port", str(self.port), "--data-dir", data, "--admin-token", ADMIN,
             "--apns-sandbox-url", f"https://localhost:{rig.sim_port}",
             "--apns-production-url", f"https://localhost:{rig.sim_port}", "--apns-ca-file", rig.cert,
             "--log-level", "warning"] + (["--database", database, "--secrets-key", SECRETS_KEY] if database else []) + pool + list(extra),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def registration_script(rig, app_id, device_key, secrets, round_number, tag="r"):
    """A wrk script registering activities and tokens of its own for each round: a
    token already registered would measure a cheaper re-registration. `secrets`
    holds the device secret of each of the sixteen devices w0…w15."""
    path = os.path.join(rig.work, f"register-{tag}{round_number}.lua")
    table = ", ".join(f'"{secrets[f"w{i}"]}"' for i in range(16))
    with open(path, "w") as f:
        f.write(f"""
local threadid = 0
local secrets = {{{table}}}
function setup(thread) thread:set("id", threadid); threadid = threadid + 1 end
function init(args) n = 0 end
request = function()
  n = n + 1
  local device = (n % 8) + id * 8
  local path = "/v1/apps/{app_id}/devices/w" .. device .. "/activities/{tag}{round_number}a" .. id .. "-" .. n
  local body = '{{"activity_type":"MatchAttributes","token":"' .. string.format("%064x", ({round_number} * 100 + id) * 100000000 + n) .. '"}}'
  return wrk.format("PUT", path, {{["Authorization"] = "Bearer {device_key}", ["Content-Type"] = "application/json",
    ["Islet-Device-Secret"] = secrets[device + 1]}}, body)
end
""")
    return path


def register_devices(port, app, names):
    """Registers the devices `names` of `app`; answers each one's device secret."""
    return {name: http("PUT", port, f"/v1/apps/{app['id']}/devices/{name}", app["device_key"],
                       {"platform": "ios", "environment": "sandbox"})["device_secret"] for name in names}


def bench_app(rig, server):
    """An app with sixteen devices on `server`; answers its id and keys."""
    with open(rig.key) as f:
        pem = f.read()
    app = http("POST", server.port, "/v1/apps", ADMIN, {
        "name": "Bench", "bundle_id": "com.example.bench",
        "apns": {"team_id": TEAM_ID, "key_id": KEY_ID, "private_key": pem}})
    app["secrets"] = register_devices(server.port, app, [f"w{i}" for i in range(16)])
    return app


def api(rig, quick, results, progress):
    seconds = 5 if quick else 15
    data = os.path.join(rig.work, "api-data")
    server = Server(rig, data)
    with open(rig.key) as f:
        pem = f.read()
    app = http("POST", server.port, "/v1/apps", ADMIN, {
        "name": "Bench", "bundle_id": "com.example.bench",
        "apns": {"team_id": TEAM_ID, "key_id": KEY_ID, "private_key": pem}})
    app_id, device_key, server_key = app["id"], app["device_key"], app["server_key"]
    secrets = register_devices(server.port, app, [f"w{i}" for i in range(16)] + [f"paced-{i}" for i in range(16)])
    http("PUT", server.port, f"/v1/apps/{app_id}/devices/w0/activities/bench-update", device_key,
         {"activity_type": "MatchAttributes", "token": "cd" * 32}, headers={"Islet-Device-Secret": secrets["w0"]})
    def register_script(round_number):
        return registration_script(rig, app_id, device_key, secrets, round_number)

    update = os.path.join(rig.work, "update.lua")
    with open(update, "w") as f:
        f.write(f"""
function init(args) n = 0 end
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/apps/{app_id}/activities/bench-update/update",
    {{["Authorization"] = "Bearer {server_key}", ["Content-Type"] = "application/json"}},
    '{{"content_state":{{"home":' .. n .. ',"away":0}}}}')
end
""")
    # /healthz and registration take turns over three rounds and the median round
    # of each counts: one lucky or unlucky burst on this shared machine would
    # otherwise set both the ratio and the rate the latency is measured at.
    rounds = 1 if quick else 3
    healthz, registers = [], []
    for round_number in range(rounds):
        healthz.append(wrk(server.port, seconds // rounds, path="/healthz"))
        registers.append(wrk(server.port, seconds // rounds, register_script(round_number)))

    def median_round(samples):
        ordered = sorted(samples, key=lambda sample: sample["rps"])
        return dict(ordered[len(ordered) // 2], rounds=[sample["rps"] for sample in samples])

    table = {"healthz": median_round(healthz), "register": median_round(registers)}
    table["update"] = wrk(server.port, seconds, update)
    half = max(1, int(table["register"]["rps"] / 2))
    table["register_at_half_rate"] = paced_rounds(server.port, app_id, device_key, secrets, half, seconds,
                                                  rig.work, 1 if quick else 3)
    for name in ("register", "update"):
        table[name]["over_healthz"] = table[name]["rps"] / table["healthz"]["rps"]
    table["server_peak_rss_mb"] = rss_mb(server.process.pid)
    server.stop()
    results["api"] = table
    progress.note(f"healthz {table['healthz']['rps']:.0f}/s, register {table['register']['rps']:.0f}/s "
                  f"(rounds {' '.join(f'{x:.0f}' for x in table['register']['rounds'])}), "
                  f"update {table['update']['rps']:.0f}/s; register at {half}/s: "
                  f"p99 {table['register_at_half_rate']['p99_ms']:.1f} ms")
    return app_id


# Each paced round's (due, latency) pairs, for the plot; too long for results.json.
TIMELINES = []
LATENCY_FIELDS = ("p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms")


def paced_rounds(port, app_id, device_key, secrets, rate, seconds, work, rounds):
    """Registration at a fixed `rate` in `rounds` rounds: each round's latency
    distribution, the worst round's of each percentile, and each round's latency over
    time (for the plot)."""
    table = {"rate": rate, "rounds": []}
    for round_number in range(rounds):
        timeline = os.path.join(work, f"paced-{round_number}.txt")
        out = kv(run([BENCH, "paced", "--port", str(port), "--app", app_id, "--key", device_key, "--kind",
                      "register", "--rate", str(rate), "--seconds", str(seconds), "--timeline", timeline,
                      "--secrets", ",".join(secrets[f"paced-{i}"] for i in range(16))]))
        row = {name: float(out[name]) for name in LATENCY_FIELDS}
        row["achieved_rps"] = float(out["achieved_rps"])
        row["failures"] = int(out["failures"])
        with open(timeline) as f:
            TIMELINES.append([[float(x) for x in line.split()] for line in f if line.strip()])
        table["rounds"].append(row)
    # Every round must meet the targets: the worst round is the figure.
    for name in LATENCY_FIELDS:
        table[name] = max(row[name] for row in table["rounds"])
    table["achieved_rps"] = min(row["achieved_rps"] for row in table["rounds"])
    table["failures"] = sum(row["failures"] for row in table["rounds"])
    return table


def memory(rig, quick, results, progress):
    tokens = 200_000 if quick else 1_000_000
    data = os.path.join(rig.work, "memory-data")
    server = Server(rig, data)
    app = http("POST", server.port, "/v1/apps", ADMIN, {"name": "Memory", "bundle_id": "com.example.memory"})
    server.stop()
    out = kv(run([BENCH, "populate", "--database", os.path.join(data, "islet.sqlite"), "--app", app["id"],
                  "--tokens", str(tokens)]))
    server = Server(rig, data)
    # Reads and writes over the whole table, as a live server would see.
    http("GET", server.port, f"/v1/apps/{app['id']}/activities?limit=200", app["server_key"])
    http("GET", server.port, f"/v1/apps/{app['id']}/activities/m{tokens // 2}", app["server_key"])
    # The populated devices have no secret, as devices registered before secrets
    # existed: the server key gives m1 one, as support would.
    secret = http("POST", server.port, f"/v1/apps/{app['id']}/devices/m1/secret/reset", app["server_key"], {})["device_secret"]
    http("PUT", server.port, f"/v1/apps/{app['id']}/devices/m1/activities/extra", app["device_key"],
         {"activity_type": "MatchAttributes", "token": "ef" * 32}, headers={"Islet-Device-Secret": secret})
    for _ in range(20):
        http("GET", server.port, f"/v1/apps/{app['id']}/activities?limit=200&status=started", app["server_key"])
    peak = rss_mb(server.process.pid)
    server.stop()
    db_mb = os.path.getsize(os.path.join(data, "islet.sqlite")) / 1e6
    results["memory"] = {"tokens": tokens, "server_peak_rss_mb": peak, "database_mb": db_mb,
                         "populate_seconds": float(out["seconds"])}
    progress.note(f"{tokens} tokens: peak RSS {peak:.0f} MB (database {db_mb:.0f} MB)")


def overview(rig, quick, results, progress):
    """An app's overview of the day over a million pushes (100,000 sends of ten, 1%
    failed, rows of their own), through the API: beside GET /healthz and the
    app's activities page on the same server, and against a second's budget."""
    sends = 20_000 if quick else 100_000
    data = os.path.join(rig.work, "overview-data")
    server = Server(rig, data)
    app = http("POST", server.port, "/v1/apps", ADMIN, {"name": "Overview", "bundle_id": "com.example.overview"})
    server.stop()
    out = kv(run([BENCH, "populate-sends", "--database", os.path.join(data, "islet.sqlite"), "--app", app["id"],
                  "--sends", str(sends), "--targets", "10", "--failures", "0"]))
    server = Server(rig, data)

    def timed(path, key, rounds=7):
        samples = []
        for _ in range(rounds):
            began = time.perf_counter()
            http("GET", server.port, path, key)
            samples.append((time.perf_counter() - began) * 1000)
        return median(samples)
    answer = http("GET", server.port, f"/v1/apps/{app['id']}/overview?period=day", app["server_key"])
    counted = answer["totals"]["pushes"]
    day_ms = timed(f"/v1/apps/{app['id']}/overview?period=day", app["server_key"])
    week_ms = timed(f"/v1/apps/{app['id']}/overview?period=week", app["server_key"])
    healthz_ms = timed("/healthz", None)
    server.stop()
    row = {"pushes": int(out["pushes"]), "sends": sends, "counted": counted, "day_ms": day_ms, "week_ms": week_ms,
           "healthz_ms": healthz_ms, "day_vs_second": day_ms / 1000, "populate_seconds": float(out["seconds"])}
    results["overview"] = row
    progress.note(f"{row['pushes']} pushes in {sends} sends: the day's overview in {day_ms:.1f} ms "
                  f"({row['day_vs_second']:.3f} of a second; /healthz {healthz_ms:.1f} ms), the week's in {week_ms:.1f} ms")


def recovery(quick, results, progress):
    devices = 10_000 if quick else 100_000
    out = kv(run([BENCH, "fanout", "--islet", ISLET, "--devices", str(devices), "--connections", "8",
                  "--kill-at", "0.3"]))
    row = {"devices": devices, "lost": int(out["lost"]), "sent_twice": int(out["sent_twice"]),
           "recovery_seconds": float(out["recovery_seconds"]), "finished": out["finished"] == "true",
           "answered_before_kill": int(out["answered_before_kill"])}
    results["recovery"] = row
    progress.note(f"{devices} devices, killed after {row['answered_before_kill']}: lost {row['lost']}, "
                  f"sent twice {row['sent_twice']}, finished {row['recovery_seconds']:.1f} s after restart")


def psql(url, statement):
    """Runs one statement with Debian's psql on `url`."""
    binary = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]
    return run([binary, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", statement]).strip()


DATABASES = iter(range(1, 1_000_000))
# Connections per node to PostgreSQL: twice the cores.
POOL = 2 * (os.cpu_count() or 2)


def new_database():
    """A fresh database on the bench's PostgreSQL server (ISLET_TEST_POSTGRES_URL,
    started durable by `Benchmarks/run.sh`); answers its URL."""
    server = os.environ["ISLET_TEST_POSTGRES_URL"]
    name = f"bench_{next(DATABASES)}"
    psql(server, f"CREATE DATABASE {name}")
    socket_url = os.environ.get("ISLET_TEST_POSTGRES_SOCKET_URL")
    if socket_url and not os.environ.get("ISLET_BENCH_POSTGRES_TCP"):
        # The nodes run on the database's machine: over its Unix socket.
        return socket_url.replace("@/postgres?", f"@/{name}?")
    return server.rsplit("/", 1)[0] + "/" + name


def postgres(rig, quick, results, progress):
    """PostgreSQL beside SQLite, taking turns: registration, fan-out, SIGKILL
    recovery; and two nodes on PostgreSQL beside one."""
    seconds = 6 if quick else 15
    rounds = 1 if quick else 3
    table = {"server": psql(os.environ["ISLET_TEST_POSTGRES_URL"], "SHOW server_version")}
    # Registration: one server of each, taking turns round after round.
    servers = {"sqlite": Server(rig, os.path.join(rig.work, "pg-sqlite-data")),
               "postgresql": Server(rig, os.path.join(rig.work, "pg-data"), database=new_database())}
    apps = {name: bench_app(rig, server) for name, server in servers.items()}
    samples = {name: [] for name in servers}
    for round_number in range(rounds):
        for name, server in servers.items():
            script = registration_script(rig, apps[name]["id"], apps[name]["device_key"], apps[name]["secrets"], round_number,
                                         tag=f"p{name[0]}")
            samples[name].append(wrk(server.port, max(2, seconds // rounds), script))
    for name, server in servers.items():
        ordered = sorted(samples[name], key=lambda sample: sample["rps"])
        table[f"register_{name}"] = dict(ordered[len(ordered) // 2], rounds=[x["rps"] for x in samples[name]])
        table[f"{name}_peak_rss_mb"] = rss_mb(server.process.pid)
        server.stop()
    table["register_ratio"] = table["register_postgresql"]["rps"] / table["register_sqlite"]["rps"]
    progress.note(f"register: SQLite {table['register_sqlite']['rps']:.0f}/s p99 {table['register_sqlite']['p99_ms']:.1f} ms, "
                  f"PostgreSQL {table['register_postgresql']['rps']:.0f}/s p99 {table['register_postgresql']['p99_ms']:.1f} ms")

    def fan(devices, database=None, nodes=1, kill_at=None):
        cmd = [BENCH, "fanout", "--islet", ISLET, "--devices", str(devices), "--connections", "8"]
        if database:
            cmd += ["--database", database, "--nodes", str(nodes), "--database-pool-size", str(POOL)]
        if kill_at:
            cmd += ["--kill-at", str(kill_at)]
        out = kv(run(cmd))
        return {key: (value == "true" if key == "finished" else float(value)) for key, value in out.items()}

    for devices in ([10_000] if quick else [10_000, 100_000]):
        lite = fan(devices)
        pg = fan(devices, new_database())
        two = fan(devices, new_database(), nodes=2)
        row = {"sqlite": lite, "postgresql": pg, "postgresql_two_nodes": two,
               "ratio": pg["fanout_pushes_per_second"] / lite["fanout_pushes_per_second"],
               "two_nodes_over_one": two["fanout_pushes_per_second"] / pg["fanout_pushes_per_second"]}
        table[f"fanout_{devices}"] = row
        progress.note(f"fan-out {devices:,}: SQLite {lite['fanout_pushes_per_second']:.0f}/s "
                      f"({lite['server_cpu_seconds']:.1f} s CPU), PostgreSQL {pg['fanout_pushes_per_second']:.0f}/s "
                      f"({pg['server_cpu_seconds']:.1f} s CPU), two nodes {two['fanout_pushes_per_second']:.0f}/s "
                      f"({two['server_cpu_seconds']:.1f} s CPU in both)")
    devices = 10_000 if quick else 100_000
    recovered = fan(devices, new_database(), kill_at=0.3)
    table["recovery"] = {"devices": devices, "lost": int(recovered["lost"]), "sent_twice": int(recovered["sent_twice"]),
                         "recovery_seconds": recovered["recovery_seconds"], "finished": recovered["finished"]}
    progress.note(f"recovery on PostgreSQL, {devices:,} devices: lost {int(recovered['lost'])}, "
                  f"sent twice {int(recovered['sent_twice'])}, finished {recovered['recovery_seconds']:.1f} s after restart")
    results["postgres"] = table


class Client:
    """One keep-alive HTTP/1.1 connection, for the steps that make tens of thousands
    of requests (`http` opens a connection per request)."""

    def __init__(self, port):
        self.port, self.connection = port, None

    def request(self, method, path, key, body=None, headers=None):
        """Answers (status, body): parsed when JSON, the bytes otherwise. Every request
        made through this is idempotent (PUT, GET, DELETE), so one broken connection
        is retried once."""
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        headers = dict(headers or {}, Authorization=f"Bearer {key}")
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            if self.connection is None:
                self.connection = httpclient.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                answer = response.read()
                if response.will_close:
                    self.close()
                return response.status, json.loads(answer) if answer and answer[:1] in b"{[" else answer
            except (httpclient.HTTPException, OSError):
                self.close()
                if attempt:
                    raise

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def on_lanes(port, lanes, items, work):
    """Runs `work(client, item)` for every item, over `lanes` threads of a keep-alive
    connection each; `work` answers None, or a failure's description. Answers the
    failures."""
    failures, lock = [], threading.Lock()

    def lane(index):
        client = Client(port)
        try:
            for item in items[index::lanes]:
                try:
                    failure = work(client, item)
                except Exception as error:
                    failure = f"{type(error).__name__}: {error}"
                if failure:
                    with lock:
                        failures.append(failure)
        finally:
            client.close()
    threads = [threading.Thread(target=lane, args=(index,)) for index in range(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def status_mb(pid, field):
    """`field` of /proc/PID/status (VmRSS: resident now, VmHWM: its peak) in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    """CPU time (user and system) the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, fraction):
    """The nearest-rank percentile of `values`, sorted."""
    if not values:
        return 0
    return values[min(len(values) - 1, max(0, int(round(fraction * len(values) + 0.5)) - 1))]


def register_holders(server, app, activities, prefix):
    """Registers a device per activity, each holding that activity's update token
    (the activity is created by the registration, as an app that started it locally
    makes it). Answers requests per second."""
    app_id, key = app["id"], app["device_key"]

    def register(client, index):
        device = f"/v1/apps/{app_id}/devices/{prefix}{index}"
        status, body = client.request("PUT", device, key, {"platform": "ios", "environment": "sandbox"})
        secret = body.get("device_secret") if isinstance(body, dict) else None
        if status >= 300 or not secret:
            return f"device {index}: {status} {body}"
        token = format(ord(prefix[0]) << 40 | index, "064x")
        status, body = client.request("PUT", f"{device}/activities/{prefix}{index}", key,
                                      {"activity_type": "MatchAttributes", "token": token},
                                      headers={"Islet-Device-Secret": secret})
        return None if status < 300 else f"activity {index}: {status} {body}"
    started = time.time()
    failures = on_lanes(server.port, 4, list(range(activities)), register)
    if failures:
        raise RuntimeError(f"{len(failures)} registrations failed, first: {failures[0]}")
    return 2 * activities / (time.time() - started)


def put_timelines(server, app, bodies, lanes):
    """PUTs each (activity id, body) timeline; answers the seconds each took, sorted."""
    path = f"/v1/apps/{app['id']}/activities/{{}}/timeline"
    seconds, lock = [], threading.Lock()

    def put(client, item):
        activity_id, body = item
        started = time.time()
        status, answer = client.request("PUT", path.format(activity_id), app["server_key"], body)
        with lock:
            seconds.append(time.time() - started)
        return None if status == 200 else f"timeline of {activity_id}: {status} {str(answer)[:300]}"
    failures = on_lanes(server.port, lanes, bodies, put)
    if failures:
        raise RuntimeError(f"{len(failures)} timeline PUTs failed, first: {failures[0]}")
    return sorted(seconds)


def read_only(data):
    """The server's SQLite database, opened read-only beside the running server."""
    return sqlite3.connect(f"file:{os.path.join(data, 'islet.sqlite')}?mode=ro", uri=True, timeout=30)


def schedules(rig, quick, results, progress):
    """Timelines: (1) many entries due in one minute, how late they fire and at what
    rate; (2) the server's memory with a million entries pending beside a few."""
    table = results["schedules"] = {}
    failures = []
    for name, part in (("firing", schedule_firing), ("memory", schedule_memory)):
        try:
            table[name] = part(rig, quick, progress)
        except Exception as error:  # the other part still runs
            failures.append(f"{name}: {error}")
            progress.note(f"{name} FAILED: {error}")
    if failures:
        raise RuntimeError("; ".join(failures))


def watch_pending(database, send_ats, deadline, by_front=True):
    """Looks at the items still scheduled every 100 ms until none is or `deadline`
    passes; answers (time, items settled) samples. `send_ats` are the items' due
    times (ms), sorted. Items fire soonest first, each round's together: by its
    front (the soonest still scheduled, one index lookup) the items before it have
    fired; items due at one instant are counted instead."""
    samples = []
    while True:
        if by_front:
            front = database.execute("SELECT min(send_at) FROM schedules WHERE status = 'scheduled'").fetchone()[0]
            settled = len(send_ats) if front is None else bisect.bisect_left(send_ats, front)
        else:
            pending = database.execute("SELECT count(*) FROM schedules WHERE status = 'scheduled'").fetchone()[0]
            settled = len(send_ats) - pending
        now = time.time()
        samples.append((now, settled))
        if settled >= len(send_ats) or now > deadline:
            return samples
        time.sleep(0.1)


def seen_lateness(samples, send_ats):
    """How late each item settled as seen from outside, in ms, sorted: item k (of
    `send_ats`, ms, sorted) had settled by the first sample counting k."""
    late, k = [], 0
    for at, count in samples:
        while k < min(count, len(send_ats)):
            late.append(at * 1000 - send_ats[k])
            k += 1
    return sorted(late)


def schedule_firing(rig, quick, progress):
    """N activities, each held by a device of its own, each with a timeline of ten
    entries spaced a tenth of the window apart; the activities' first entries are
    staggered over that tenth, so the entries cover the window evenly and no two of
    one activity are due together (only the newest of those would be sent). The
    window starts once every timeline is in. Lateness is read from each item's
    fired_at (the time its firing round started) and, from outside, by counting the
    items still scheduled every 100 ms. Then a burst: one entry on each activity,
    all due at the same instant, to see how fast a backlog is worked off."""
    activities = 1_000 if quick else 10_000
    per_activity = 10
    window = 30.0 if quick else 60.0
    spacing = window / per_activity
    items = activities * per_activity
    data = os.path.join(rig.work, "schedules-data")
    server = Server(rig, data)
    try:
        app = bench_app(rig, server)
        pid = server.process.pid
        started = time.time()
        registration_rate = register_holders(server, app, activities, "s")
        registration_seconds = time.time() - started
        progress.note(f"{activities:,} activities registered ({registration_rate:.0f} requests/s)")
        # The window starts after the PUTs: allowed three times as long as the
        # registrations took (a PUT of ten entries weighs more than a registration).
        begin = time.time() + max(15.0, 3 * registration_seconds) + 5
        bodies = []
        for index in range(activities):
            first = begin + spacing * index / activities
            bodies.append((f"s{index}", {"entries": [
                {"at": round(first + spacing * k, 3), "content_state": {"home": k, "away": index % 7}}
                for k in range(per_activity)]}))
        put_started = time.time()
        put_seconds = put_timelines(server, app, bodies, 4)
        put_elapsed = time.time() - put_started
        progress.note(f"{activities:,} timelines of {per_activity} entries PUT in {put_elapsed:.1f} s "
                      f"({activities / put_elapsed:.0f}/s, p99 {percentile(put_seconds, 0.99) * 1000:.0f} ms); "
                      f"window starts {begin - time.time():.1f} s from now")
        if time.time() >= begin - 0.5:
            raise RuntimeError(f"the timeline PUTs took {put_elapsed:.1f} s and ran into the window they schedule")
        database = read_only(data)
        send_ats = [row[0] for row in database.execute("SELECT send_at FROM schedules ORDER BY send_at")]
        while time.time() < begin - 1:
            time.sleep(0.1)
        cpu_before = cpu_seconds(pid)
        deadline = begin + window + (120 if quick else 300)
        samples = watch_pending(database, send_ats, deadline)
        cpu_firing = cpu_seconds(pid) - cpu_before
        while time.time() < deadline:
            in_flight = sum(database.execute(statement).fetchone()[0] for statement in (
                "SELECT count(*) FROM pushes WHERE status IN ('queued', 'sending')",
                "SELECT count(*) FROM sends WHERE state IN ('queued', 'claimed')"))
            if in_flight == 0:
                break
            time.sleep(0.2)
        delivered_at = time.time()
        rows = database.execute(
            "SELECT activity_id, send_at, fired_at, status, reason FROM schedules WHERE kind = 'timeline_entry'").fetchall()
        # Each update is a send by windows (one copy per activity here): sent when its
        # window settled, unless its copy's push has a row of its own.
        pushes = database.execute(
            "SELECT activity_id, id, sent_at, status FROM pushes WHERE event = 'update' AND send_id NOT IN "
            "(SELECT id FROM sends WHERE audience = 'copies') "
            "UNION ALL SELECT activity_id, id, CASE WHEN sent > 0 THEN progressed_at END, "
            "CASE WHEN sent > 0 THEN 'sent' WHEN state IN ('superseded', 'dropped') THEN 'dropped' ELSE 'queued' END "
            "FROM sends WHERE event = 'update' AND audience = 'copies' AND total > exceptions "
            "UNION ALL SELECT activity_id, send_id, sent_at, status FROM pushes WHERE event = 'update' AND send_id IN "
            "(SELECT id FROM sends WHERE audience = 'copies') ORDER BY 2").fetchall()
        rss_after_window = status_mb(pid, "VmRSS")

        # The burst: a new timeline of one entry on every activity, all at one instant.
        burst_at = round(time.time() + 2 * put_elapsed + 5, 3)
        burst_started = time.time()
        put_timelines(server, app, [(f"s{index}", {"entries": [{"at": burst_at, "content_state": {"home": 99, "away": 0}}]})
                                    for index in range(activities)], 4)
        if time.time() >= burst_at - 0.5:
            raise RuntimeError(f"the burst's PUTs took {time.time() - burst_started:.1f} s and ran past its time")
        while time.time() < burst_at - 1:
            time.sleep(0.1)
        cpu_before = cpu_seconds(pid)
        burst_samples = watch_pending(database, [int(burst_at * 1000)] * activities, burst_at + 120, by_front=False)
        cpu_burst = cpu_seconds(pid) - cpu_before
        burst_rows = database.execute(
            "SELECT send_at, fired_at, status FROM schedules WHERE timeline_generation = 2").fetchall()
        database.close()
        peak = status_mb(pid, "VmHWM")
    finally:
        server.stop()

    statuses = {}
    for _, _, _, status, reason in rows:
        name = status if status != "dropped" else f"dropped ({reason})"
        statuses[name] = statuses.get(name, 0) + 1
    fired = [row for row in rows if row[3] in ("sent", "dropped")]
    late = sorted(fired_at - send_at for _, send_at, fired_at, _, _ in fired)
    first_due, last_due = min(row[1] for row in rows) / 1000, max(row[1] for row in rows) / 1000
    last_fired = max(row[2] for row in fired) / 1000 if fired else 0
    observed = seen_lateness(samples, send_ats)
    # Each activity's pushes, in order, carry its entries as they were sent.
    sent_by_activity, pushed_by_activity = {}, {}
    for activity_id, send_at, _, status, _ in sorted(rows, key=lambda row: row[1]):
        if status == "sent":
            sent_by_activity.setdefault(activity_id, []).append(send_at)
    for activity_id, _, sent_at, status in pushes:
        pushed_by_activity.setdefault(activity_id, []).append(sent_at if status == "sent" else None)
    delivery = sorted(sent_at - send_at for activity_id, due in sent_by_activity.items()
                      for send_at, sent_at in zip(due, pushed_by_activity.get(activity_id, []))
                      if sent_at is not None)
    by_slice = {}
    for _, send_at, fired_at, _, _ in fired:
        by_slice.setdefault(int((send_at / 1000 - first_due) // 5), []).append(fired_at - send_at)
    slices = [{"from_s": 5 * index, "p50_ms": percentile(sorted(by_slice[index]), 0.5),
               "max_ms": max(by_slice[index])} for index in sorted(by_slice)]
    burst_settled = [t for t, count in burst_samples if count >= activities]
    burst_drain = (burst_settled[0] - burst_at) if burst_settled else None
    # From the last sample before the first item settled to the first with all: the
    # firing itself, without the wait for the timekeeper's next look.
    burst_idle = [t for t, count in burst_samples if count == 0]
    burst_work = burst_settled[0] - max([burst_at] + burst_idle) if burst_settled else None
    burst_sent = sum(1 for row in burst_rows if row[2] == "sent")
    burst_late = sorted(fired_at - send_at for send_at, fired_at, status in burst_rows if fired_at is not None)
    row = {
        "activities": activities, "items": items, "window_seconds": window, "spacing_seconds": spacing,
        "registration_requests_per_second": registration_rate,
        "timeline_puts_per_second": activities / put_elapsed, "timeline_put_p50_ms": percentile(put_seconds, 0.5) * 1000,
        "timeline_put_p99_ms": percentile(put_seconds, 0.99) * 1000,
        "statuses": statuses, "settled": len(fired), "finished": len(fired) == items,
        "lateness_p50_ms": percentile(late, 0.5), "lateness_p99_ms": percentile(late, 0.99),
        "lateness_max_ms": late[-1] if late else 0,
        "last_fired_after_last_due_ms": (last_fired - last_due) * 1000,
        "seen_lateness_p50_ms": percentile(observed, 0.5), "seen_lateness_p99_ms": percentile(observed, 0.99),
        "seen_lateness_max_ms": observed[-1] if observed else 0,
        "seen_settled_after_last_due_ms": (samples[-1][0] - last_due) * 1000, "lateness_by_5s": slices,
        "items_per_second": len(fired) / (last_fired - first_due) if last_fired > first_due else 0,
        "pushes_sent": len(delivery), "pushes_delivered_after_last_due_ms": (delivered_at - last_due) * 1000,
        "delivery_lateness_p50_ms": percentile(delivery, 0.5), "delivery_lateness_p99_ms": percentile(delivery, 0.99),
        "server_cpu_seconds_firing": cpu_firing, "server_rss_after_window_mb": rss_after_window,
        "burst": {"items": activities, "sent": burst_sent, "finished": burst_drain is not None,
                  "drained_seconds": burst_drain or 0, "firing_seconds": burst_work or 0,
                  "items_per_second": activities / burst_work if burst_work else 0,
                  "fired_at_lateness_max_ms": burst_late[-1] if burst_late else 0, "server_cpu_seconds": cpu_burst},
        "server_peak_rss_mb": peak,
    }
    progress.note(f"{items:,} entries due in {window:.0f} s: {', '.join(f'{n:,} {s}' for s, n in sorted(statuses.items()))}; "
                  f"late by fired_at p50 {row['lateness_p50_ms']:.0f} ms, p99 {row['lateness_p99_ms']:.0f} ms, "
                  f"max {row['lateness_max_ms']:.0f} ms; seen from outside p50 {row['seen_lateness_p50_ms']:.0f} ms, "
                  f"p99 {row['seen_lateness_p99_ms']:.0f} ms, max {row['seen_lateness_max_ms']:.0f} ms; "
                  f"{row['items_per_second']:.0f} items/s; pushes answered p99 "
                  f"{row['delivery_lateness_p99_ms']:.0f} ms after due; server CPU {cpu_firing:.1f} s")
    progress.note("the latest of each 5 s of the window, late by (ms): " + " ".join(str(x["max_ms"]) for x in slices))
    burst = row["burst"]
    progress.note(f"burst of {activities:,} due at once: {burst_sent:,} sent, all settled "
                  f"{burst['drained_seconds']:.2f} s after due, {burst['firing_seconds']:.2f} s after the first "
                  f"({burst['items_per_second']:.0f} items/s, "
                  f"server CPU {cpu_burst:.1f} s); peak RSS {peak:.0f} MB")
    return row


def schedule_memory(rig, quick, progress):
    """Resident memory with a few pending timeline entries, then with 1,440 on each
    of N activities (a million for 700), all due hours ahead (inside the 8-hour
    update window) so that none fires while it is measured."""
    activities = 70 if quick else 700
    entries = 1_440
    spacing = 18  # seconds: 1,440 entries over 7.2 hours, from 10 minutes ahead
    data = os.path.join(rig.work, "schedules-memory-data")
    server = Server(rig, data)
    try:
        app = bench_app(rig, server)
        register_holders(server, app, activities, "m")
        pid = server.process.pid
        first = int(time.time()) + 600

        def body(count):
            return {"entries": [{"at": first + spacing * k, "content_state": {"n": k}} for k in range(count)]}
        # A few pending: ten timelines of ten entries, the same code path warmed up.
        put_timelines(server, app, [(f"m{index}", body(10)) for index in range(10)], 1)
        time.sleep(3)
        few_pending = read_only_count(data)
        rss_few = status_mb(pid, "VmRSS")
        cpu = cpu_seconds(pid)
        time.sleep(10)
        idle_cpu_few = (cpu_seconds(pid) - cpu) / 10
        full = json.dumps(body(entries), separators=(",", ":")).encode()
        started = time.time()
        put_seconds = put_timelines(server, app, [(f"m{index}", full) for index in range(activities)], 2)
        put_elapsed = time.time() - started
        progress.note(f"{activities} timelines of {entries:,} entries ({len(full):,} bytes each) PUT in "
                      f"{put_elapsed:.1f} s (p50 {percentile(put_seconds, 0.5) * 1000:.0f} ms, "
                      f"max {put_seconds[-1] * 1000:.0f} ms each)")
        time.sleep(5)
        many_pending = read_only_count(data)
        rss_many = status_mb(pid, "VmRSS")
        cpu = cpu_seconds(pid)
        time.sleep(10)
        idle_cpu_many = (cpu_seconds(pid) - cpu) / 10
        client = Client(server.port)
        page_ms = []
        for _ in range(20):
            at = time.time()
            status, _ = client.request("GET", f"/v1/apps/{app['id']}/schedules?status=scheduled&limit=200",
                                       app["server_key"])
            page_ms.append((time.time() - at) * 1000)
            if status != 200:
                raise RuntimeError(f"GET /schedules answered {status}")
        # Cancelled again, all of them: what the server keeps after the PUTs.
        cleared = on_lanes(server.port, 2, list(range(activities)), lambda client, index: None if client.request(
            "DELETE", f"/v1/apps/{app['id']}/activities/m{index}/timeline", app["server_key"])[0] == 204
            else f"DELETE timeline m{index} failed")
        if cleared:
            raise RuntimeError(f"{len(cleared)} timeline DELETEs failed")
        time.sleep(5)
        rss_cleared = status_mb(pid, "VmRSS")
        client.close()
        page_ms.sort()
        peak = status_mb(pid, "VmHWM")
    finally:
        server.stop()
    database_mb = sum(os.path.getsize(path) for path in glob.glob(os.path.join(data, "islet.sqlite*"))) / 1e6
    row = {"activities": activities, "entries_per_timeline": entries, "timeline_body_bytes": len(full),
           "pending_few": few_pending, "pending_many": many_pending, "rss_few_mb": rss_few, "rss_many_mb": rss_many,
           "rss_ratio": rss_many / rss_few if rss_few else 0, "rss_cancelled_mb": rss_cleared, "server_peak_rss_mb": peak,
           "timeline_put_p50_ms": percentile(put_seconds, 0.5) * 1000, "timeline_put_max_ms": put_seconds[-1] * 1000,
           "timeline_puts_seconds": put_elapsed, "entries_per_second": activities * entries / put_elapsed,
           "idle_cpu_few": idle_cpu_few, "idle_cpu_many": idle_cpu_many,
           "schedules_page_p50_ms": percentile(page_ms, 0.5), "database_mb": database_mb}
    progress.note(f"RSS {rss_few:.0f} MB with {few_pending:,} pending, {rss_many:.0f} MB with {many_pending:,} "
                  f"({row['rss_ratio']:.2f}×; peak {peak:.0f} MB; {rss_cleared:.0f} MB once all were cancelled; "
                  f"database {database_mb:.0f} MB); idle CPU "
                  f"{idle_cpu_few:.1%} vs {idle_cpu_many:.1%}; a page of 200 pending {row['schedules_page_p50_ms']:.0f} ms")
    return row


def read_only_count(data):
    """Schedule items still pending, read from the database file."""
    database = read_only(data)
    try:
        return database.execute("SELECT count(*) FROM schedules WHERE status = 'scheduled'").fetchone()[0]
    finally:
        database.close()


def open_streams(port, app, count, types):
    """`count` event streams of `app` taking `types`, each a socket whose headers
    were read; a thread reads and discards what they receive. Answers (sockets,
    stop)."""
    import selectors
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall((f"GET /v1/apps/{app['id']}/events?types={types} HTTP/1.1\r\nHost: bench\r\n"
                      f"Accept: text/event-stream\r\n"
                      f"Authorization: Bearer {app['server_key']}\r\n\r\n").encode())
        sockets.append(sock)
    for sock in sockets:
        sock.settimeout(30)
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"an event stream was refused: {head[:80]!r}")
        sock.setblocking(False)
    stopping = threading.Event()
    received = [0]
    selector = selectors.DefaultSelector()
    for sock in sockets:
        selector.register(sock, selectors.EVENT_READ)

    def drain():
        while not stopping.is_set():
            for key, _ in selector.select(timeout=0.2):
                try:
                    received[0] += len(key.fileobj.recv(65536))
                except BlockingIOError:
                    pass
    thread = threading.Thread(target=drain, daemon=True)
    thread.start()

    def stop():
        stopping.set()
        thread.join()
        selector.close()
        for sock in sockets:
            sock.close()
        return received[0]
    return sockets, stop


def webhooks(rig, quick, results, progress):
    """A fan-out to N devices makes N push.* events; a webhook on push.* delivers
    them to one local receiver (islet-bench webhook-receiver) over kept-alive
    connections: deliveries per second, first to last at the receiver. Then the same
    fan-out again with 1,000 event streams open, each following the app's
    activity.* events as the dashboard does: pushes per second beside the first.
    The fan-out's own events are push.* (every stream's feed reads them and passes
    them over), so the streams get little but keep-alives."""
    devices = 10_000 if quick else 100_000
    streams = 1_000
    data = os.path.join(rig.work, "webhooks-data")
    receiver_port = free_port()
    receiver = rig.spawn([BENCH, "webhook-receiver", "--port", str(receiver_port)])
    wait_port(receiver_port)
    # The streams exceed the default cap of event streams an app may hold (100).
    server = Server(rig, data, extra=["--webhooks-allow-http", "--webhooks-allow-private",
                                      "--max-event-streams-per-app", str(streams * 2)])
    try:
        app = bench_app(rig, server)
        app_id = app["id"]

        def register(client, index):
            status, body = client.request("PUT", f"/v1/apps/{app_id}/devices/f{index}", app["device_key"], {
                "platform": "ios", "environment": "sandbox", "apns_token": format(0xfa << 48 | index, "064x"),
                "tags": ["everyone"]})
            return None if status < 300 else f"device {index}: {status} {body}"
        started = time.time()
        failures = on_lanes(server.port, 4, list(range(devices)), register)
        if failures:
            raise RuntimeError(f"{len(failures)} registrations failed, first: {failures[0]}")
        progress.note(f"{devices:,} devices registered ({devices / (time.time() - started):.0f}/s)")
        database = read_only(data)

        def settled():
            return database.execute("SELECT count(*) FROM pushes WHERE status != 'queued' AND status != 'sending'").fetchone()[0]

        def unsettled():
            # Counted through the queue's partial indexes, in time proportional to
            # what is left: counting the settled pushes read the whole table (up to
            # 500,000 rows) ten times a second, a third of a core taken from the
            # fan-out being measured.
            return database.execute(
                "SELECT (SELECT count(*) FROM pushes WHERE status = 'queued') "
                "+ (SELECT count(*) FROM pushes WHERE status = 'sending')").fetchone()[0]

        def fan_out(label):
            """One alert to every device; answers pushes per second, queued to answered.
            The notification's pushes are all queued when its answer comes."""
            before = settled()
            sent_at = time.time()
            http("POST", server.port, f"/v1/apps/{app_id}/notifications", app["server_key"], {
                "audience": {"tags": ["everyone"]}, "alert": {"title": "Bench", "body": label}})
            deadline = sent_at + 600
            while time.time() < deadline and unsettled() > 0:
                time.sleep(0.1)
            elapsed = time.time() - sent_at
            done = settled() - before
            if done < devices:
                raise RuntimeError(f"{label}: {done:,} of {devices:,} pushes settled within 600 s")
            return devices / elapsed

        def stats():
            with urllib.request.urlopen(f"http://127.0.0.1:{receiver_port}/stats", timeout=10) as response:
                return json.loads(response.read())

        def delivered_at_least(count):
            deadline = time.time() + 600
            while time.time() < deadline and stats()["count"] < count:
                time.sleep(0.2)
            return stats()

        # Side by side: in each round, the fan-out with no webhook on, then with the
        # webhook on push.* (its deliveries finished before the next round).
        rounds = 1 if quick else 2
        without_hook, with_hook = [], []
        hook, first = None, None
        for number in range(rounds):
            if hook:
                http("PATCH", server.port, f"/v1/apps/{app_id}/webhooks/{hook['id']}", app["server_key"],
                     {"enabled": False})
            without_hook.append(fan_out(f"round {number + 1}, no webhook"))
            if hook:
                http("PATCH", server.port, f"/v1/apps/{app_id}/webhooks/{hook['id']}", app["server_key"],
                     {"enabled": True})
            else:
                hook = http("POST", server.port, f"/v1/apps/{app_id}/webhooks", app["server_key"], {
                    "url": f"http://127.0.0.1:{receiver_port}/hook", "events": ["push.*"]})
            expected = (stats()["count"] if number else 0) + devices
            with_hook.append(fan_out(f"round {number + 1}, webhook on"))
            reached = delivered_at_least(expected)
            if first is None:
                first = reached
        plain_rate = median(with_hook)
        webhook_ratio = median(with_hook) / median(without_hook) if median(without_hook) else 0
        delivered = first["count"]
        delivery_rate = delivered / (first["last"] - first["first"]) if first["last"] > first["first"] else 0
        progress.note(f"fan-out {devices:,}: {median(without_hook):.0f} pushes/s without the webhook, "
                      f"{plain_rate:.0f} with ({webhook_ratio:.2f}); {delivered:,} push events delivered to the "
                      f"webhook at {delivery_rate:.0f}/s over {first['connections']} connections")
        sockets, stop = open_streams(server.port, app, streams, "activity.*")
        try:
            time.sleep(1)
            streamed_rate = fan_out(f"{streams} streams")
        finally:
            streamed_bytes = stop()
        progress.note(f"the same fan-out with {len(sockets):,} event streams of activity.* open: {streamed_rate:.0f} pushes/s "
                      f"({streamed_rate / plain_rate:.2f} of without); the streams received {streamed_bytes / 1e6:.1f} MB")
        database.close()
        rss = status_mb(server.process.pid, "VmHWM")
    finally:
        server.stop()
        receiver.terminate()
    results["webhooks"] = {
        "devices": devices, "webhook_id": hook.get("id"), "events_delivered": delivered,
        "deliveries_per_second": delivery_rate, "connections": first["connections"],
        "fanout_pushes_per_second": plain_rate, "streams": streams,
        "fanout_pushes_per_second_without_webhook": median(without_hook), "webhook_ratio": webhook_ratio,
        "rounds_without_webhook": without_hook, "rounds_with_webhook": with_hook,
        "fanout_pushes_per_second_with_streams": streamed_rate, "streams_ratio": streamed_rate / plain_rate if plain_rate else 0,
        "server_peak_rss_mb": rss,
    }


def targets(results):
    """Each target with the figure measured and whether it was met."""
    rows = []
    t = results.get("transport", {})
    for c in ("1", "4"):
        if c in t:
            rows.append((f"APNs client ÷ h2load, {c} conn.", t[c]["islet_over_h2load"], 0.8, "≥"))
            rows.append((f"APNs client ÷ aioapns, {c} conn.", t[c]["islet_over_aioapns"], 1.0, "≥"))
    if "memory" in t:
        m = t["memory"]
        growth = m["rss_end_mb"] / m["rss_tenth_mb"] if m["rss_tenth_mb"] else 0
        rows.append((f"client RSS growth, {m['pushes'] // 10:,} → {m['pushes']:,} pushes", growth, 1.1, "<"))
    s = results.get("simulator", {})
    for c in ("1", "4"):
        if c in s:
            rows.append((f"islet sim ÷ nghttpd, {c} conn.", s[c]["sim_over_nghttpd"], 0.8, "≥"))
    fan = results.get("fanout", {})
    for n, row in fan.items():
        if "over_transport" in row:
            rows.append((f"fan-out {int(n):,} ÷ transport (1 conn.)", row["over_transport"], 0.5, "≥"))
        if "fanout_over_wire" in row:
            rows.append((f"fan-out {int(n):,} ÷ h2load to the same simulator and tokens", row["fanout_over_wire"],
                         0.5, "≥"))
        rows.append((f"server peak RSS, fan-out {int(n):,} (MB)", row["server_peak_rss_mb"], 200, "<"))
        if "db_bytes_per_push" in row:
            rows.append((f"SQLite growth per delivered push, fan-out {int(n):,} (bytes)", row["db_bytes_per_push"],
                         40, "≤"))
            rows.append((f"rows added per delivered push, fan-out {int(n):,}", row["rows_added_per_push"], 0.1, "≤"))
        if "row_writes_per_push" in row:
            rows.append((f"row writes per delivered push, fan-out {int(n):,}", row["row_writes_per_push"], 0.1, "≤"))
    if "10000" in fan and "100000" in fan:
        rows.append(("fan-out 100,000 ÷ fan-out 10,000, pushes per second", fan["100000"]["fanout_pushes_per_second"]
                     / fan["10000"]["fanout_pushes_per_second"], 1.0, "≥"))
    b = results.get("broadcast")
    if b:
        reach = f"{b['channel_devices']:,.0f} channel subscribers vs {b['tokens_devices']:,.0f} token holders"
        rows.append((f"{reach}: pushes Islet sent, channel", b["channel_pushes"], 1, "="))
        rows.append((f"{reach}: phones showing the update, channel", b["channel_reached"], b["channel_devices"], "="))
        rows.append((f"{reach}: tokens' seconds ÷ channel's", b["tokens_over_channel_seconds"], 1.0, "≥"))
        rows.append((f"{reach}: tokens' server CPU ÷ channel's", b["tokens_over_channel_cpu"], 10.0, "≥"))
    a = results.get("api", {})
    if a:
        rows.append(("token registration ÷ /healthz", a["register"]["over_healthz"], 0.4, "≥"))
        rows.append(("POST …/update to one device ÷ /healthz", a["update"]["over_healthz"], 0.3, "≥"))
        paced = a["register_at_half_rate"]
        rounds = len(paced.get("rounds", [])) or 1
        for name, label, target in (("p50_ms", "p50", None), ("p90_ms", "p90", None), ("p99_ms", "p99", 20),
                                    ("p999_ms", "p99.9", 50), ("max_ms", "max", None)):
            if name in paced:
                rows.append((f"registration {label} at half max, worst of {rounds} rounds (ms)", paced[name],
                             target, "<" if target else ""))
    m = results.get("memory")
    if m:
        rows.append((f"RSS with {m['tokens']:,} tokens (MB)", m["server_peak_rss_mb"], 200, "<"))
    o = results.get("overview")
    if o:
        rows.append((f"an app's overview of a day of {o['pushes']:,} pushes ÷ one second", o["day_vs_second"], 0.2, "<"))
        rows.append((f"pushes the overview counts ÷ pushes sent", o["counted"] / o["pushes"], 1, "="))
    r = results.get("recovery")
    if r:
        rows.append(("pushes lost after SIGKILL", r["lost"], 0, "="))
        # Only the windows the node held in flight go again: at most its in-flight
        # limit (--delivery-max-in-flight, 2,000 by default).
        rows.append(("pushes sent twice after SIGKILL", r["sent_twice"], 2000, "≤"))
    p = results.get("postgres")
    if p:
        rows.append(("PostgreSQL ÷ SQLite, token registration", p["register_ratio"], 0.6, "≥"))
        rows.append(("PostgreSQL registration p99 (ms)", p["register_postgresql"]["p99_ms"], 20, "<"))
        for key, row in sorted(p.items()):
            if key.startswith("fanout_"):
                devices = int(key.split("_")[1])
                rows.append((f"PostgreSQL ÷ SQLite, fan-out {devices:,}", row["ratio"], 0.6, "≥"))
                rows.append((f"two nodes ÷ one on PostgreSQL, fan-out {devices:,} (2 cores)", row["two_nodes_over_one"], 0.5, "≥"))
        rows.append(("pushes lost after SIGKILL on PostgreSQL", p["recovery"]["lost"], 0, "="))
        rows.append(("pushes sent twice after SIGKILL on PostgreSQL", p["recovery"]["sent_twice"], 2000, "≤"))
    s = results.get("schedules", {})
    f = s.get("firing")
    if f:
        # The timekeeper looks every quarter second: "a due item is queued well
        # within a second".
        due = f"{f['items']:,} timeline entries due in {f['window_seconds']:.0f} s"
        rows.append((f"{due}: lateness p50 (ms)", f["lateness_p50_ms"], None, ""))
        rows.append((f"{due}: lateness p99 (ms)", f["lateness_p99_ms"], 1000, "<"))
        rows.append((f"{due}: the latest, late by (ms)", f["lateness_max_ms"], None, ""))
        rows.append((f"{due}: fired per second", f["items_per_second"], None, ""))
        b = f["burst"]
        rows.append((f"{b['items']:,} timeline entries due at one instant: fired per second", b["items_per_second"],
                     None, ""))
    m = s.get("memory")
    if m:
        rows.append((f"server RSS with {m['pending_few']:,} schedule items pending (MB)", m["rss_few_mb"], None, ""))
        rows.append((f"server RSS with {m['pending_many']:,} pending (MB)", m["rss_many_mb"], 200, "<"))
        rows.append(("server RSS, many pending ÷ few", m["rss_ratio"], None, ""))
    w = results.get("webhooks")
    if w:
        rows.append((f"webhook deliveries per second, {w['devices']:,} push events to one receiver",
                     w["deliveries_per_second"], 2000, "≥"))
        rows.append((f"fan-out {w['devices']:,} with {w['streams']:,} event streams open ÷ without", w["streams_ratio"], 0.9, "≥"))
        if "webhook_ratio" in w:
            rows.append((f"fan-out {w['devices']:,} with a webhook on push.* ÷ without, side by side", w["webhook_ratio"],
                         0.8, "≥"))
    r = results.get("retention")
    if r:
        rows.append((f"database size (file + WAL) at the end ÷ once a {r['retention_seconds'] / 60:.0f}-minute history "
                     f"retention passed, {r['pushes_answered']:,.0f} pushes", r["growth_after_window"], 1.1, "<"))
    out = []
    for name, value, target, op in rows:
        if not op:  # a figure without a target
            out.append({"name": name, "value": value, "target": "", "met": None})
            continue
        met = (value >= target if op == "≥" else value < target if op == "<" else value <= target if op == "≤"
               else value == target)
        out.append({"name": name, "value": value, "target": f"{op} {target}", "met": met})
    return out


def plots(results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    t = results.get("transport")
    if t:
        fig, ax = plt.subplots(figsize=(7, 4))
        names = ["islet", "h2load", "aioapns"]
        for offset, c in enumerate(("1", "4")):
            values = [t[c][n] for n in names]
            ax.bar([i + offset * 0.4 for i in range(3)], values, width=0.4, label=f"{c} connection(s)")
        ax.set_xticks([i + 0.2 for i in range(3)], ["Islet APNs client", "h2load (limit)", "aioapns (peer)"])
        ax.set_ylabel("pushes per second")
        ax.set_title("Transport to islet sim over TLS")
        ax.legend()
        written.append(save(fig, "transport.png"))
    rows = targets(results)
    ratios = [r for r in rows if r["target"].startswith("≥") and "aioapns" not in r["name"]]
    if ratios:
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(ratios) + 1.2))
        names = [r["name"] for r in ratios]
        values = [r["value"] for r in ratios]
        goals = [float(r["target"].split()[1]) for r in ratios]
        colors = ["tab:green" if r["met"] else "tab:red" for r in ratios]
        ax.barh(names, values, color=colors)
        ax.scatter(goals, names, marker="|", s=300, color="black", label="target")
        ax.set_xlabel("ratio, measured side by side in one run")
        ax.invert_yaxis()
        ax.legend(loc="lower right")
        written.append(save(fig, "ratios.png"))
    a = results.get("api")
    if a:
        fig, ax = plt.subplots(figsize=(7, 4))
        names = ["healthz", "register", "update"]
        ax.bar(names, [a[n]["rps"] for n in names])
        ax.set_ylabel("requests per second (wrk, 16 connections)")
        ax.set_title("HTTP API")
        written.append(save(fig, "api.png"))
    paced = (a or {}).get("register_at_half_rate", {})
    if paced.get("rounds"):
        fig, ax = plt.subplots(figsize=(8, 4))
        for number, (row, timeline) in enumerate(zip(paced["rounds"], TIMELINES)):
            if timeline:
                xs, ys = zip(*timeline)
                ax.plot(xs, ys, linewidth=0.6, label=f"round {number + 1} (p99 {row['p99_ms']:.1f} ms)")
        ax.set_yscale("log")
        ax.set_xlabel("seconds into the round")
        ax.set_ylabel("latency from when due (ms)")
        ax.set_title(f"Update-token registration at {paced['rate']:,} requests/s (half the maximum)")
        ax.legend()
        written.append(save(fig, "registration-latency.png"))
    r = results.get("retention")
    if r and r.get("samples"):
        fig, ax = plt.subplots(figsize=(8, 4))
        xs = [sample["seconds"] for sample in r["samples"]]
        ax.plot(xs, [sample["file_mb"] + sample["wal_mb"] for sample in r["samples"]], label="file + WAL (MB)")
        ax.axvline(r["window_seconds"], color="gray", linestyle="--", label="retention and three purges passed")
        ax.set_xlabel("seconds")
        ax.set_ylabel("MB")
        ax.set_title(f"Database size, history kept {r['retention_seconds'] / 60:.0f} min")
        ax.legend()
        written.append(save(fig, "retention.png"))
    return written


def save(fig, name):
    path = os.path.join(RESULTS, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return name


HISTORY = os.path.join(RESULTS, "history.jsonl")
# How many earlier full runs give a figure's run-to-run spread.
SPREAD_RUNS = 5
# The least spread assumed (a tenth of the earlier figure) while history is short.
SPREAD_FLOOR = 0.10


def load_history():
    """The earlier full runs, oldest first: one JSON object per line of history.jsonl."""
    runs = []
    try:
        with open(HISTORY) as f:
            for line in f:
                line = line.strip()
                if line:
                    runs.append(json.loads(line))
    except FileNotFoundError:
        pass
    return runs


def compare(rows, history):
    """Adds to each row the figure of the latest earlier full run that has it, the
    run-to-run spread (the range of its last SPREAD_RUNS figures, at least a tenth of
    the previous figure) and whether this run moved by more than that."""
    for row in rows:
        earlier = [run["figures"][row["name"]] for run in history
                   if isinstance(run.get("figures", {}).get(row["name"]), (int, float))]
        row["previous"], row["moved"] = None, None
        if not earlier or not isinstance(row["value"], (int, float)):
            continue
        previous = earlier[-1]
        recent = earlier[-SPREAD_RUNS:]
        spread = max(max(recent) - min(recent), SPREAD_FLOOR * abs(previous))
        row["previous"] = previous
        row["spread"] = spread
        change = row["value"] - previous
        row["moved"] = "up" if change > spread else "down" if change < -spread else ""
    return rows


def commit_id():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def record_history(results, rows):
    """Appends this full run to history.jsonl: when, on which commit, each figure."""
    line = {"started": results["started"], "commit": commit_id(), "machine": results["machine"],
            "figures": {row["name"]: row["value"] for row in rows if isinstance(row["value"], (int, float))}}
    with open(HISTORY, "a") as f:
        f.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")


def shown(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    return f"{value:.2f}" if isinstance(value, float) and abs(value) < 100 else f"{value:,.0f}"


def report(results, images, quick, rows):
    lines = [f"# Islet benchmarks ({'quick' if quick else 'full'} run)", "",
             f"{results['started']}, {results['machine']}. Ratios are measured side by side in one run; "
             "*previous* is the latest earlier full run (bench/results/history.jsonl), and *moved* says "
             "whether this run differs from it by more than the run-to-run spread.", "",
             "| measure | value | target | met | previous | moved |", "|---|---:|---:|:---:|---:|:---:|"]
    for row in rows:
        met = "" if row["met"] is None else "yes" if row["met"] else "no"
        lines.append(f"| {row['name']} | {shown(row['value'])} | {row['target']} | {met} | "
                     f"{shown(row.get('previous'))} | {row.get('moved') or ''} |")
    lines += ["", "Raw figures are in `results.json`.", ""]
    for image in images:
        lines.append(f"![{image}]({image})")
    with open(os.path.join(RESULTS, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs; under five minutes")
    parser.add_argument("--only", help="comma-separated steps: transport,simulator,fanout,broadcast,api,memory,overview,recovery,postgres,"
                                       "schedules,webhooks,retention")
    args = parser.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": args.quick,
               "machine": f"{os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}"}
    steps = [("transport", "APNs client vs h2load and aioapns", lambda: transport(rig, args.quick, results, progress)),
             ("simulator", "islet sim vs nghttpd", lambda: simulator(rig, args.quick, results, progress)),
             ("fanout", "fan-out end to end", lambda: fanout(args.quick, results, progress)),
             ("broadcast", "an update to a million channel subscribers vs 100,000 token holders",
              lambda: broadcast(args.quick, results, progress)),
             ("api", "HTTP API under wrk", lambda: api(rig, args.quick, results, progress)),
             ("memory", "memory with registered tokens", lambda: memory(rig, args.quick, results, progress)),
             ("overview", "an app's overview of a day of a million pushes",
              lambda: overview(rig, args.quick, results, progress)),
             ("recovery", "recovery after SIGKILL mid fan-out", lambda: recovery(args.quick, results, progress)),
             ("postgres", "PostgreSQL beside SQLite, two nodes beside one",
              lambda: postgres(rig, args.quick, results, progress)),
             ("schedules", "timeline entries due in one minute, and memory with many pending",
              lambda: schedules(rig, args.quick, results, progress)),
             ("webhooks", "webhook deliveries of a fan-out's events, and sends with 1,000 event streams open",
              lambda: webhooks(rig, args.quick, results, progress)),
             ("retention", "the database's size under fan-outs with a history kept a couple of minutes",
              lambda: retention(args.quick, results, progress))]
    if args.only:
        wanted = set(args.only.split(","))
        steps = [step for step in steps if step[0] in wanted]
    progress = Progress(len(steps) + 1)
    work = tempfile.mkdtemp(prefix="islet-bench-")
    rig = None
    try:
        progress.step("keys, certificates and islet sim")
        rig = Rig(work)
        for _, name, step in steps:
            progress.step(name)
            try:
                step()
            except Exception as error:  # a failed step is reported, the others still run
                results.setdefault("errors", {})[name] = str(error)
                progress.note(f"FAILED: {error}")
    finally:
        if rig:
            rig.close()
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(RESULTS, "results.json"), "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
    images = plots(results)
    rows = compare(targets(results), load_history())
    # Only a full run of every step, without errors, joins the history that later
    # runs compare with.
    full = not args.quick and not args.only and not results.get("errors")
    if full:
        record_history(results, rows)
    lines = report(results, images, args.quick, rows)
    print("\n".join(lines[4:-len(images) - 2] if images else lines[4:]))
    print(f"\nwrote {os.path.relpath(RESULTS, ROOT)}/results.json, report.md"
          + (", " + ", ".join(images) if images else ""))
    return 1 if results.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())

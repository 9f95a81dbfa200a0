"""The peer in the APNs client benchmark: aioapns (PyPI) sending the same alert push
to the same simulator, with a bounded number of pushes in flight.

Usage: aioapns_peer.py HOST PORT CA KEY KEY_ID TEAM_ID CONNECTIONS COUNT CONCURRENCY
Prints: pushes_per_second=... delivered=... seconds=...
"""
import asyncio
import logging
import ssl
import sys
import time

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection

# aioapns logs every wait for a free stream; only failures matter here.
logging.getLogger("aioapns").setLevel(logging.ERROR)

host, port, ca, key, key_id, team_id = sys.argv[1:7]
connections, count, concurrency = (int(x) for x in sys.argv[7:10])

# aioapns knows only Apple's hosts; point its sandbox protocol at the simulator.
connection.APNsDevelopmentClientProtocol.APNS_SERVER = host
connection.APNsDevelopmentClientProtocol.APNS_PORT = int(port)


async def main() -> None:
    context = ssl.create_default_context(cafile=ca)
    apns = APNs(
        key=open(key).read(), key_id=key_id, team_id=team_id, topic="com.example.app",
        use_sandbox=True, ssl_context=context, max_connections=connections,
    )
    token = "ab" * 32
    message = {"aps": {"alert": {"title": "Order", "body": "On its way"}}}

    async def one() -> bool:
        result = await apns.send_notification(
            NotificationRequest(device_token=token, message=message, push_type=PushType.ALERT))
        return result.is_successful

    for _ in range(connections * 2):  # warm up every connection
        await one()
    delivered = 0
    remaining = count
    start = time.perf_counter()

    async def worker() -> None:
        nonlocal delivered, remaining
        while remaining > 0:
            remaining -= 1
            if await one():
                delivered += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - start
    print(f"pushes_per_second={int(count / seconds)} delivered={delivered} seconds={seconds:.3f}")


asyncio.run(main())

#!/usr/bin/env python3
"""A loopback HTTP/1.1 server that parks requests, for scripts/parked-memory.sh.

    parked_server.py PORT_FILE HOLD BODY_FILE [HOLD_SECONDS]

Answers no request until HOLD requests are waiting at once (or one has waited HOLD_SECONDS),
then answers them all with BODY_FILE; connections are kept. So a client's peak memory is taken
with HOLD requests in flight, sent and unanswered. Writes its port to PORT_FILE once listening.
"""
import asyncio, sys

port_file, hold, body_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
hold_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
body = open(body_path, "rb").read()
answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
waiting = []


async def handle(reader, writer):
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            parked = asyncio.get_running_loop().create_future()
            waiting.append(parked)
            if len(waiting) >= hold:
                for each in waiting:
                    if not each.done():
                        each.set_result(None)
                waiting.clear()
            else:
                try:
                    await asyncio.wait_for(asyncio.shield(parked), hold_seconds)
                except asyncio.TimeoutError:
                    if parked in waiting:
                        waiting.remove(parked)
            writer.write(answer)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.sockets[0].getsockname()[1]))
    import os
    os.replace(port_file + ".tmp", port_file)
    async with server:
        await server.serve_forever()


asyncio.run(main())

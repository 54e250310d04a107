"""The REST control of ``rlbench servebench``: the same models behind a plain ASGI server, no Ray runtime.

As Clipper stood in the paper: one process, Starlette on uvicorn (one worker, its default event loop),
answering ``POST /json/<model>`` and ``POST /bytes/<model>`` with :mod:`rlbench.studies.serve_policies`,
one forward at a time. The parent binds the listening socket on 127.0.0.1 itself and hands it over
(``--fd``), so the server never chooses an address and the parent knows the port before it starts.
:class:`RestServer` starts it, waits until it answers and stops it (SIGTERM, then SIGKILL after 5 s).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

#: Seconds an idle keep-alive connection stays open, here and in Serve's proxy. uvicorn's default of 5 s
#: closed a waiting client's connection while the one event loop was busy with another client's 136 MB JSON
#: body for longer than that (the client then saw a broken pipe in the middle of its next request).
KEEP_ALIVE_S = 600
#: The module run as the server's process (its command line names it: the sampler's ``server`` role).
MODULE = "rlbench.studies.serve_rest"


def app(checkpoints: dict[str, str]):
    """The Starlette app: the models loaded, one route."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from rlbench.studies.serve_policies import BadRequest, PolicyBook, route

    book = PolicyBook(checkpoints)

    async def infer(request):
        try:
            fmt, model = route(request.url.path)
            body, media = book.answer_http(fmt, model, await request.body())
        except BadRequest as e:
            return PlainTextResponse(str(e), status_code=400)
        return Response(body, media_type=media)

    async def ready(_request):
        return PlainTextResponse(str(os.getpid()))

    return Starlette(routes=[Route("/ready", ready), Route("/{fmt}/{model}", infer, methods=["POST"])])


def main(argv: list[str] | None = None) -> None:
    """The server process: ``--fd`` a listening socket, ``--checkpoints`` a JSON object name -> path."""
    parser = argparse.ArgumentParser(prog=MODULE)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--checkpoints", required=True)
    args = parser.parse_args(argv)
    import uvicorn

    sock = socket.socket(fileno=args.fd)
    server = uvicorn.Server(
        uvicorn.Config(
            app(json.loads(args.checkpoints)),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=KEEP_ALIVE_S,
        )
    )
    server.run(sockets=[sock])


class RestServer:
    """The REST control's process, from the parent's side."""

    def __init__(self, checkpoints: dict[str, str], log_path: Path):
        self.checkpoints = checkpoints
        self.log_path = log_path
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 120.0) -> int:
        """Start it on 127.0.0.1 (a port the kernel picks) and wait until it answers; returns its pid."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            self.port = sock.getsockname()[1]
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        MODULE,
                        "--fd",
                        str(sock.fileno()),
                        "--checkpoints",
                        json.dumps(self.checkpoints),
                    ],
                    pass_fds=[sock.fileno()],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
        finally:
            sock.close()  # the child holds its own copy
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the REST server exited with {self.proc.returncode} before answering (its log: {self.log_path})"
                )
            with suppress(OSError):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/ready")
                if conn.getresponse().status == 200:
                    conn.close()
                    return self.proc.pid
                conn.close()
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the REST server did not answer within {timeout_s:.0f} s (its log: {self.log_path})"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; waits for it (idempotent)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


if __name__ == "__main__":
    main()

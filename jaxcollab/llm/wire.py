"""A lean HTTP/1.1 client on asyncio streams: what :class:`~jaxcollab.llm.client.ChatClient`
sends its chat requests with.

Why not httpx: measured against the test server (``tests/llm_server.py``, 0.5 s replies, 64
threads of 12 requests each, one event loop per thread as the LLM run's workers have), an
``httpx.AsyncClient`` cost 7.1 ms of CPU a request (13.5 ms with one client on one shared
loop), a raw ``http.client`` keep-alive connection 0.5 ms and this client 0.6 ms; at a server
answering 256 requests a second, httpx alone would need ~1.8 of a 2-core machine's cores.

What it does: ``POST`` a JSON body over keep-alive connections (one per request in flight,
kept for the next request of the same thread's loop), TLS with the given SSL context, a
connect timeout, ``Content-Length`` and chunked replies, gzip / deflate bodies; a kept
connection the server closed while idle is reopened once before anything is counted as an
error. No read timeout: the caller times requests by the server's progress. Failures raise
httpx's exception classes (``httpx.ConnectTimeout``, ``httpx.ConnectError``,
``httpx.RemoteProtocolError``, ``httpx.ReadError``), so callers classify them as for httpx.
A URL a proxy setting applies to (``HTTP(S)_PROXY``, ``ALL_PROXY``, less ``NO_PROXY``) is not
sent here: :func:`proxied` tells the caller to use httpx, which honours them.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.request
import zlib
from urllib.parse import urlsplit

import httpx

#: Seconds to open a connection (httpx's ``connect`` timeout as the chat client set it).
CONNECT_S = 30.0


def proxied(url: str) -> bool:
    """Whether a proxy setting of the environment applies to ``url`` (then httpx sends it)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    return bool(proxies.get(parts.scheme) or proxies.get("all")) and \
        not urllib.request.proxy_bypass(parts.hostname or "")


class Response:
    """An answer: ``status_code``, ``headers`` (lower-case names), ``content`` (bytes), and
    ``text`` / :meth:`json` as on an ``httpx.Response``."""

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes):
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        """The body as JSON.

        Raises:
            ValueError: the body is not JSON (a truncated reply).
        """
        return json.loads(self.content)


class Connections:
    """Keep-alive connections to one origin, for one event loop (one per worker thread).

    Args:
        base_url: ``http(s)://host[:port]/path``; requests go to paths under it.
        headers: sent with every request (e.g. ``Authorization``).
        ssl_context: used for ``https`` URLs.
    """

    def __init__(self, base_url: str, headers: dict[str, str],
                 ssl_context: ssl.SSLContext | None = None):
        parts = urlsplit(base_url)
        self.host = parts.hostname or ""
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.ssl = (ssl_context or ssl.create_default_context()) if self.tls else None
        default = self.port == (443 if self.tls else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.headers = {"Host": host if default else f"{host}:{self.port}",
                        "User-Agent": "jaxcollab", "Accept": "application/json",
                        "Accept-Encoding": "gzip, deflate", **headers}
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, url: str, json: dict) -> Response:  # noqa: A002  (httpx's name)
        """``POST`` ``json`` to ``url`` (same origin as ``base_url``); the answer.

        Raises:
            httpx.ConnectTimeout / httpx.ConnectError: no connection within :data:`CONNECT_S`
                or refused; httpx.RemoteProtocolError / httpx.ReadError: the connection broke
                or the answer is not HTTP/1.1.
        """
        target = urlsplit(url)
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        data = _dumps(json)
        head = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        message = (f"POST {path} HTTP/1.1\r\n{head}Content-Type: application/json\r\n"
                   f"Content-Length: {len(data)}\r\n\r\n").encode("latin-1") + data
        while self._idle:  # a kept connection: the server may have closed it while idle
            conn = self._idle.pop()
            if conn[0].at_eof():
                conn[1].close()
                continue
            try:
                return await self._exchange(conn, message, fresh=False)
            except _Stale:
                continue
        return await self._exchange(await self._open(), message, fresh=True)

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=self.ssl,
                server_hostname=self.host if self.tls else None, limit=2**20), CONNECT_S)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {self.host}:{self.port} within "
                                       f"{CONNECT_S:g} s") from None
        except OSError as e:
            raise httpx.ConnectError(f"cannot connect to {self.host}:{self.port}: {e}") from None

    async def _exchange(self, conn, message: bytes, fresh: bool) -> Response:
        """Send ``message`` on ``conn`` and read the answer; ``conn`` is kept for the next
        request when the answer allows, else closed (also on any error or cancellation).

        Raises:
            _Stale: a kept connection (``fresh`` false) broke before any answer byte.
        """
        reader, writer = conn
        keep = False
        try:
            try:
                writer.write(message)
                await writer.drain()
                status_line = await reader.readline()
            except (OSError, asyncio.IncompleteReadError, ValueError) as e:
                if not fresh:
                    raise _Stale from None
                raise httpx.ReadError(f"{self.host}:{self.port}: {e!r}") from None
            if not status_line:
                if not fresh:
                    raise _Stale
                raise httpx.RemoteProtocolError("Server disconnected without sending a "
                                                "response.")
            try:
                response, keep = await _read_response(status_line, reader)
            except (OSError, asyncio.IncompleteReadError, ValueError, zlib.error) as e:
                raise httpx.RemoteProtocolError(f"{self.host}:{self.port}: a broken answer "
                                                f"({e!r})") from None
            return response
        finally:
            if keep:
                self._idle.append(conn)
            else:
                writer.close()


class _Stale(Exception):
    """A kept-alive connection the server had closed: reopen and resend."""


def _dumps(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


async def _read_response(status_line: bytes, reader: asyncio.StreamReader
                         ) -> tuple[Response, bool]:
    """The answer whose status line is ``status_line`` and whether the connection may be
    reused.

    Raises:
        ValueError: not an HTTP/1.x answer; asyncio.IncompleteReadError: the body ended early.
    """
    version, code, *_ = status_line.decode("latin-1").split(" ", 2)
    if not version.startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n"):
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    status = int(code)
    keep = headers.get("connection", "").lower() != "close" and version != "HTTP/1.0"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while size := int((await reader.readline()).split(b";")[0], 16):
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):  # trailers
            pass
        body = b"".join(parts)
    elif "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:  # the body runs to the end of the connection
        body, keep = await reader.read(), False
    encoding = headers.get("content-encoding", "").lower()
    if encoding in ("gzip", "deflate"):
        body = zlib.decompress(body, 47)  # 32 + 15: a gzip or zlib header, told apart
    return Response(status, headers, body), keep


__all__ = ["CONNECT_S", "Connections", "Response", "proxied"]

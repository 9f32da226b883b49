"""Reading one request off a connection within bounds: every read ends by a deadline, and a
body is checked from its declared framing before a byte of it is read (RFC 9112 section 6)."""

from __future__ import annotations

import io
import re
import socket
import time
from dataclasses import dataclass
from email.message import Message
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

# A size beyond 2**60 is no size any client means: malformed (400), not too large (413).
_LENGTH = re.compile(r"[0-9]{1,18}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_MAX_LINE = 4096  # a chunk-size line with its extensions, or one trailer line
_MAX_TRAILERS = 64


class BadFraming(Exception):
    """The body's framing cannot be trusted: answer 400 and close the connection."""


class BodyTooLarge(Exception):
    """The body is, or is declared, larger than the limit: answer 413 and close."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"Body exceeds {limit} bytes.")  # the app's own wording
        self.limit = limit


@dataclass(frozen=True)
class Framing:
    chunked: bool
    length: int = 0  # Content-Length, when not chunked


def framing_of(headers: Message, limit: int) -> Framing:
    """How the body is delimited, refused if malformed or declared larger than `limit`."""
    encodings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if not encodings:
        return Framing(chunked=False, length=_declared_length(lengths, limit))
    if lengths:
        raise BadFraming("Content-Length and Transfer-Encoding together")
    if ",".join(encodings).strip().lower() != "chunked":
        raise BadFraming("Transfer-Encoding other than chunked")
    return Framing(chunked=True)


def _declared_length(values: list[str], limit: int) -> int:
    texts = {value.strip() for value in values} or {"0"}
    if len(texts) > 1:
        raise BadFraming("conflicting Content-Length headers")
    text = texts.pop()
    if not _LENGTH.fullmatch(text):
        raise BadFraming(f"invalid Content-Length: {text[:40]!r}")
    if int(text) > limit:
        raise BodyTooLarge(limit)
    return int(text)


def read_body(rfile: BinaryIO, framing: Framing, limit: int) -> bytes:
    """The body as framed; at most `limit` bytes of it are read."""
    if framing.chunked:
        return _read_chunked(rfile, limit)
    return _read_exactly(rfile, framing.length)


def _read_chunked(rfile: BinaryIO, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while size := _chunk_size(rfile):
        total += size
        if total > limit:  # refused on the declared size: the chunk is never read
            raise BodyTooLarge(limit)
        chunks.append(_read_exactly(rfile, size))
        if _line(rfile):
            raise BadFraming("chunk longer than its declared size")
    _skip_trailers(rfile)
    return b"".join(chunks)


def _chunk_size(rfile: BinaryIO) -> int:
    text = _line(rfile).split(b";", 1)[0].strip(b" \t")
    if not _CHUNK_SIZE.fullmatch(text):
        raise BadFraming(f"invalid chunk size: {text[:40]!r}")
    return int(text, 16)


def _skip_trailers(rfile: BinaryIO) -> None:
    for _ in range(_MAX_TRAILERS):
        if not _line(rfile):
            return
    raise BadFraming("too many trailer lines")


def _line(rfile: BinaryIO) -> bytes:
    line = rfile.readline(_MAX_LINE + 1)
    if not line.endswith(b"\n"):
        raise BadFraming("chunked body truncated or a line too long")
    return line.rstrip(b"\r\n")


def _read_exactly(rfile: BinaryIO, size: int) -> bytes:
    data = rfile.read(size)
    if len(data) != size:
        raise BadFraming("request body shorter than declared")
    return data


class DeadlineSocketIO(io.RawIOBase):
    """A socket's reading side. Between requests a read waits up to `idle` seconds; once a
    request has begun (:meth:`start`), every read ends by its deadline, so a client that
    trickles bytes holds a thread for at most `idle` plus the read budget."""

    def __init__(self, sock: socket.socket, idle: float) -> None:
        super().__init__()
        self._sock, self._idle = sock, idle
        self._deadline: float | None = None
        sock.settimeout(idle)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._sock.settimeout(self._timeout())
        return self._sock.recv_into(buffer)

    def start(self, budget: float) -> None:
        self._deadline = time.monotonic() + budget

    def stop(self) -> None:
        """Back to the idle timeout, which also bounds writing the response."""
        self._deadline = None
        self._sock.settimeout(self._idle)

    def _timeout(self) -> float:
        if self._deadline is None:
            return self._idle
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("request not received in time")
        return remaining


def linger(sock: socket.socket, seconds: float) -> None:
    """Half-close after refusing a request whose body was not read, and discard what the
    client still sends for up to `seconds`: closing with unread data makes the kernel send
    a reset, which can destroy the refusal before the client reads it."""
    deadline = time.monotonic() + seconds
    try:
        sock.shutdown(socket.SHUT_WR)
        while (remaining := deadline - time.monotonic()) > 0:
            sock.settimeout(remaining)
            if not sock.recv(1 << 16):
                return
    except OSError:
        pass  # the client left or stayed too long: close either way

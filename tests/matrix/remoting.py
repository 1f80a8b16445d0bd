"""RocketMQ remoting frames by hand (/work/shared/protocol/REMOTING.md §1): what the matrix's
mqadmin fixture and its hostile row send. Python 3 standard library only."""

import itertools
import json
import socket
import struct
import threading

# Request codes (REMOTING.md §3).
SEND_MESSAGE = 10
PULL_MESSAGE = 11
UPDATE_CONSUMER_OFFSET = 15
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
HEART_BEAT = 34
GET_BROKER_RUNTIME_INFO = 28
SUCCESS = 0
SYSTEM_ERROR = 1
REQUEST_CODE_NOT_SUPPORTED = 3

RESPONSE_FLAG = 0x1
ONEWAY_FLAG = 0x2
# Java's decoder refuses larger frames (REMOTING.md §1.2); no answer the matrix reads is near it.
MAX_FRAME = 16 * 1024 * 1024
# The MQVersion ordinal the frames claim (V4_9_7, REMOTING.md Appendix B).
VERSION = 399

_opaques = itertools.count(1)


class RemotingError(Exception):
    pass


def next_opaque():
    return next(_opaques)


def encode_header(code, ext=None, opaque=None, flag=0, remark=None):
    header = {"code": code, "flag": flag, "language": "PYTHON", "opaque": next_opaque() if opaque is None else opaque, "version": VERSION}
    if ext is not None:
        header["extFields"] = ext
    if remark is not None:
        header["remark"] = remark
    return json.dumps(header).encode()


def frame(header_bytes, body=b""):
    """length(4) | serialize type 0 (JSON) << 24 | header length (4) | header | body."""
    return struct.pack(">ii", 4 + len(header_bytes) + len(body), len(header_bytes)) + header_bytes + body


def request(code, ext=None, body=b"", flag=0):
    header = encode_header(code, ext, flag=flag)
    return json.loads(header)["opaque"], frame(header, body)


def recv_exact(sock, count):
    chunks = []
    while count:
        chunk = sock.recv(min(count, 1 << 20))
        if not chunk:
            raise EOFError("connection closed")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_frame(sock):
    """(header dict, body) of the next frame; EOFError when the peer closed."""
    length, header_word = struct.unpack(">ii", recv_exact(sock, 8))
    header_len = header_word & 0xFFFFFF
    if header_word >> 24 != 0 or not 0 < header_len <= length - 4 or length > MAX_FRAME:
        raise RemotingError(f"unexpected frame: length {length}, header word {header_word:#x}")
    header = json.loads(recv_exact(sock, header_len))
    return header, recv_exact(sock, length - 4 - header_len)


def properties(pairs):
    """The properties string: name 0x01 value 0x02 (REMOTING.md §6.3)."""
    return "".join(f"{name}\x01{value}\x02" for name, value in pairs.items())


class Connection:
    """One client connection: requests matched to responses by opaque on a reader thread, and
    requests from the broker (e.g. GET_CONSUMER_RUNNING_INFO) answered REQUEST_CODE_NOT_SUPPORTED,
    as a client without that processor would."""

    def __init__(self, addr, timeout):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.settimeout(None)  # the reader blocks; each call bounds its own wait
        self.timeout = timeout
        self.lock = threading.Lock()
        self.waiting = {}  # opaque -> [Event, (header, body) or None]
        self.closed = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            while True:
                header, body = read_frame(self.sock)
                if header.get("flag", 0) & RESPONSE_FLAG:
                    with self.lock:
                        slot = self.waiting.pop(header.get("opaque"), None)
                    if slot is not None:
                        slot[1] = (header, body)
                        slot[0].set()
                elif not header.get("flag", 0) & ONEWAY_FLAG:
                    reply = encode_header(
                        REQUEST_CODE_NOT_SUPPORTED, opaque=header.get("opaque"), flag=RESPONSE_FLAG,
                        remark=f"request code {header.get('code')} not supported by the matrix fixture",
                    )
                    with self.lock:
                        self.sock.sendall(frame(reply))
        except (OSError, EOFError, RemotingError, ValueError) as err:
            with self.lock:
                self.closed = err
                for slot in self.waiting.values():
                    slot[0].set()
                self.waiting.clear()

    def call(self, code, ext=None, body=b""):
        """Sends a request and returns the (header, body) of its response."""
        opaque, data = request(code, ext, body)
        slot = [threading.Event(), None]
        with self.lock:
            if self.closed is not None:
                raise RemotingError(f"connection closed: {self.closed}")
            self.waiting[opaque] = slot
            self.sock.sendall(data)
        if not slot[0].wait(self.timeout):
            raise RemotingError(f"no response to request code {code} within {self.timeout} s")
        if slot[1] is None:
            raise RemotingError(f"connection closed before the response to code {code}: {self.closed}")
        return slot[1]

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

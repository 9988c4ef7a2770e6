"""How the generator writes its files: lines gathered into large chunks, gzipped where a file's
name ends in .gz, the same bytes however the work is split.

The bytes do not depend on the chunks: a deflate stream without flushes is the same whether its
input comes in one piece or many, and the gzip header is fixed (no file name, mtime 0). With a
background thread (`Writer(background=True)`, `retrylake generate --jobs 2`), the compression and
the writes run beside the simulation, which goes on meanwhile: zlib and file writes release the
GIL. One thread takes the chunks in the order they were given, so every file gets them in order.
"""

from __future__ import annotations

import gzip
import json
import queue
import threading
from pathlib import Path
from typing import IO

CHUNK_CHARS = 1 << 20  # text gathered before it is encoded and handed on
QUEUED_CHUNKS = 16  # how far the simulation may run ahead of a background writer
# json.dumps(value, separators=(",", ":")), without making an encoder for every line, nor
# checking each container for a cycle: the values are trees built for the line (the same text,
# a quarter faster on an OTLP export)
compact_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _open(path: Path, compresslevel: int) -> IO[bytes]:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = path.open("wb")
    if path.suffix != ".gz":
        return raw
    # mtime 0 and no file name keep gzip output byte-identical across runs
    return gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=compresslevel, mtime=0)


def _close(handle: IO[bytes]) -> None:
    inner = getattr(handle, "fileobj", None)  # a GzipFile leaves its file open
    handle.close()
    if inner is not None:
        inner.close()


class Writer:
    """Opens, writes and closes files, here or on one background thread.

    Each operation names a `LineFile`; a background thread's failure is raised by a later call
    or by `finish`, which waits for everything to be written."""

    def __init__(self, background: bool = False) -> None:
        self._queue: queue.Queue[tuple[LineFile, bytes | None] | None] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        if background:
            self._queue = queue.Queue(maxsize=QUEUED_CHUNKS)
            self._thread = threading.Thread(target=self._work, name="file-writer", daemon=True)
            self._thread.start()

    def lines(self, path: Path, compresslevel: int = 6) -> LineFile:
        """A file of lines at ``path``, gzipped at ``compresslevel`` if its name ends in .gz."""
        return LineFile(self, path, compresslevel)

    def write_bytes(self, path: Path, data: bytes, compresslevel: int = 6) -> None:
        """A whole file at once."""
        file = self.lines(path, compresslevel)
        self._submit(file, data)
        self._submit(file, None)

    def _submit(self, file: LineFile, data: bytes | None) -> None:
        """Write ``data`` to ``file``, or close it (None)."""
        if self._queue is None:
            self._apply(file, data)
            return
        self._raise_failure()
        self._queue.put((file, data))

    @staticmethod
    def _apply(file: LineFile, data: bytes | None) -> None:
        if file.handle is None:
            file.handle = _open(file.path, file.compresslevel)
        if data is None:
            _close(file.handle)
        else:
            file.handle.write(data)

    def _work(self) -> None:
        assert self._queue is not None
        while (item := self._queue.get()) is not None:
            if self._error is None:  # after a failure, drain the queue so no producer blocks
                try:
                    self._apply(*item)
                except BaseException as error:  # raised again in the caller
                    self._error = error

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error  # as it would have been raised here (an OSError: a disk full)

    def finish(self) -> None:
        """Wait until every file handed over is written and closed."""
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = self._thread = None
        self._raise_failure()


class LineFile:
    """One output file, written a line at a time; the lines go to the `Writer` in chunks."""

    def __init__(self, writer: Writer, path: Path, compresslevel: int) -> None:
        self.writer = writer
        self.path = path
        self.compresslevel = compresslevel
        self.handle: IO[bytes] | None = None  # opened by the writer on the first chunk
        self._lines: list[str] = []
        self._chars = 0

    def write(self, line: str) -> None:
        """Write ``line`` and a newline."""
        self._lines.append(line)
        self._chars += len(line)
        if self._chars >= CHUNK_CHARS:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._lines:
            self._lines.append("")  # the last line's newline
            self.writer._submit(self, "\n".join(self._lines).encode("utf-8"))
            self._lines, self._chars = [], 0

    def close(self) -> None:
        """Write what is left and close the file (created even when it has no line)."""
        self._hand_over()
        self.writer._submit(self, None)

"""The Python side of Orch's python(...) operators (docs/python.md; protocol: docs/protocol.md).

An Orch worker runs this in each replica's process (it is compiled into the worker; this file
is its source). It loads the declared script, builds the declared class once with the
declaration's constants, then answers batches: the instance is called with one list per input
parameter and returns one value per item. An exception instance in an item's place fails that
item only; an exception raised by the call fails the whole batch (the Call's recovery policy
then narrows it down). A class may be asynchronous instead, for clients Orch does not wrap:
`async def __call__` (awaited per batch), or `async def item(self, value, ...)` (one coroutine per
item, up to the class's `in_flight` (default: the whole batch) running at once; an item that
raises fails that item only). Needs the standard library and msgpack (Debian: python3-msgpack); NumPy
is used for Image values when it is installed.
"""

import asyncio
import importlib.util
import inspect
import os
import socket
import struct
import sys
import time
import traceback

import msgpack

VERSION = 1
_BRIDGE_FILES = {globals().get("__file__", "orch_operator.py"), "orch_operator.py", "<string>"}

try:
    import numpy
except ImportError:  # Image values stay records {width, height, channels, pixels}
    numpy = None


class Channel:
    """Frames of a 4-byte big-endian length and one MessagePack map, on the worker's socket."""

    def __init__(self, fd):
        self._socket = socket.socket(fileno=fd)
        # Frames are read into one buffer that only grows: a fresh one per batch of images
        # would cost its page faults every time.
        self._buffer = bytearray(1 << 16)
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=False)

    def read(self):
        header = self._exactly(4)
        if header is None:
            return None
        (size,) = struct.unpack(">I", header)
        body = self._exactly(size)
        if body is None:
            return None
        return msgpack.unpackb(body, raw=False, strict_map_key=False)

    def write(self, message):
        # One packer whose buffer is kept from one message to the next (see _buffer).
        self._packer.reset()
        self._packer.pack(message)
        body = self._packer.getbuffer()
        try:
            self._socket.sendall(struct.pack(">I", len(body)))
            self._socket.sendall(body)
        finally:
            body.release()

    def _exactly(self, size):
        if len(self._buffer) < size:
            self._buffer = bytearray(max(size, 2 * len(self._buffer)))
        view = memoryview(self._buffer)[:size]
        got = 0
        while got < size:
            n = self._socket.recv_into(view[got:], size - got)
            if n == 0:
                return None
            got += n
        return view


def describe(error):
    """The exception with the traceback of the user's frames (the bridge's own are left out)."""
    summary = traceback.TracebackException.from_exception(error)
    frames = [f for f in summary.stack
              if f.filename not in _BRIDGE_FILES and not f.filename.startswith("<frozen ")]
    summary.stack = traceback.StackSummary.from_list(frames)
    return "".join(summary.format()).rstrip()


# --- values: Orch's MessagePack forms <-> natural Python values, directed by declared types ---


def _kind(type_description):
    return type_description["kind"]


def to_python(value, type_description):
    kind = _kind(type_description)
    if value is None:
        return None
    if kind == "Image" and numpy is not None and isinstance(value, dict):
        height, width, channels = value["height"], value["width"], value["channels"]
        pixels = numpy.frombuffer(value["pixels"], dtype=numpy.uint8)
        return pixels.reshape(height, width, channels)
    if kind == "List":
        element = type_description["element"]
        if _kind(element) in ("String", "Int", "Float", "Bool", "Json", "Text"):
            return value
        return [to_python(item, element) for item in value]
    if kind == "Record":
        fields = type_description["fields"]
        return {name: to_python(value.get(name), fields.get(name, {"kind": "Json"}))
                for name in value}
    return value


def _plain(value):
    """A NumPy or PyTorch scalar or array as a plain Python value."""
    if hasattr(value, "detach"):  # torch.Tensor
        value = value.detach().cpu().numpy()
    if numpy is not None and isinstance(value, numpy.ndarray):
        return value.tolist()
    if numpy is not None and isinstance(value, numpy.generic):
        return value.item()
    return value


def to_orch(value, type_description):
    """The result `value` in the form the declared type takes on the wire."""
    kind = _kind(type_description)
    if value is None:
        return None
    if kind == "Image":
        if isinstance(value, dict):
            return value
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = numpy.ascontiguousarray(value, dtype=numpy.uint8)
        if array.ndim == 2:
            array = array[:, :, None]
        if array.ndim != 3:
            raise TypeError("an Image is an H x W x C array of uint8, not %d-dimensional"
                            % array.ndim)
        height, width, channels = array.shape
        # A view of the array: MessagePack copies it into the message once.
        return {"width": width, "height": height, "channels": channels,
                "pixels": memoryview(array).cast("B")}
    if kind == "Bytes":
        if numpy is not None and isinstance(value, numpy.ndarray):
            return memoryview(numpy.ascontiguousarray(value)).cast("B")
        return bytes(value)
    value = _plain(value)
    if kind == "Float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "List":
        element = type_description["element"]
        return [to_orch(item, element) for item in value]
    if kind == "Record" and isinstance(value, dict):
        fields = type_description["fields"]
        return {name: to_orch(item, fields.get(name, {"kind": "Json"}))
                for name, item in value.items()}
    return value


# --- the operator ---


class Operator:
    def __init__(self, init):
        self.inputs = init["inputs"]
        self.result = init["result"]
        script = init["path"]
        folder = os.path.dirname(script)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = os.path.splitext(os.path.basename(script))[0]
        spec = importlib.util.spec_from_file_location(name, script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        class_name = init["class"]
        model_class = getattr(module, class_name, None)
        if model_class is None:
            defined = sorted(n for n, v in vars(module).items()
                             if isinstance(v, type) and v.__module__ == name)
            raise LookupError("%s defines no class %r (it defines: %s)"
                              % (script, class_name, ", ".join(defined) or "no classes"))
        self.instance = model_class(**init["constants"])
        # Asynchronous classes (for clients Orch does not wrap): a coroutine per item, or per
        # batch; both run on one event loop kept for the process.
        self.item = getattr(self.instance, "item", None)
        if not inspect.iscoroutinefunction(self.item):
            self.item = None
        self.loop = None
        if self.item or inspect.iscoroutinefunction(getattr(self.instance, "__call__", None)):
            self.loop = asyncio.new_event_loop()
        if self.item is None and not callable(self.instance):
            raise TypeError("%s instances are not callable: give the class a "
                            "__call__(self, %s) that returns one value per item (or an "
                            "async def item(self, ...) for one item)"
                            % (class_name, ", ".join(i["name"] for i in self.inputs)))

    async def _items(self, columns):
        """Each item's coroutine, at most `in_flight` at once; an exception is its result."""
        limit = getattr(self.instance, "in_flight", None)
        gate = asyncio.Semaphore(limit) if isinstance(limit, int) and limit > 0 else None

        async def one(values):
            if gate is None:
                return await self.item(*values)
            async with gate:
                return await self.item(*values)
        return await asyncio.gather(*(one(values) for values in zip(*columns)),
                                    return_exceptions=True)

    def call(self, columns):
        if self.item is not None:
            results = self.loop.run_until_complete(self._items(columns))
            # An item that raised an exception that is not an Exception (SystemExit) stops all.
            for value in results:
                if isinstance(value, BaseException) and not isinstance(value, Exception):
                    raise value
            return results
        if self.loop is not None:
            return self.loop.run_until_complete(self.instance(*columns))
        return self.instance(*columns)

    def run(self, batch):
        columns = [[to_python(value, spec["type"]) for value in column]
                   for column, spec in zip(batch["columns"], self.inputs)]
        items = len(columns[0]) if columns else 0
        try:
            results = self.call(columns)
            if isinstance(results, (dict, set, frozenset, str, bytes)):
                # Not one result per item: iterating would give keys or characters. The runtime
                # fails the batch's rows as a broken contract (no results).
                sys.stderr.write("%s returned a %s, not a list of one result per item\n"
                                 % (type(self.instance).__name__, type(results).__name__))
                return {"type": "result", "batch": batch["batch"], "values": []}
            if hasattr(results, "detach") or (numpy is not None
                                              and isinstance(results, numpy.ndarray)):
                results = list(results)
            results = list(results)
        except Exception as error:
            return {"type": "error", "batch": batch["batch"], "message": describe(error)}
        if len(results) != items:
            # The operator broke its contract: its results go back as they are, and the runtime
            # fails the batch's rows with the count (a contract violation, not a retry).
            sys.stderr.write("%s returned %d results for a batch of %d items\n"
                             % (type(self.instance).__name__, len(results), items))
        values, errors = [], {}
        for position, value in enumerate(results):
            if isinstance(value, BaseException):
                errors[position] = describe(value) if value.__traceback__ else \
                    "%s: %s" % (type(value).__name__, value)
                values.append(None)
                continue
            try:
                values.append(to_orch(value, self.result))
            except Exception as error:
                errors[position] = "cannot convert the result %r: %s" % (
                    type(value).__name__, error)
                values.append(None)
        answer = {"type": "result", "batch": batch["batch"], "values": values}
        if errors:
            answer["errors"] = errors
        return answer


def main():
    channel = Channel(int(os.environ.get("ORCH_OPERATOR_FD", "3")))
    channel.write({"type": "hello", "version": VERSION, "pid": os.getpid()})
    init = channel.read()
    if init is None:
        return 0
    started = time.monotonic()
    try:
        operator = Operator(init)
    except BaseException as error:  # SystemExit in a constructor is a start failure too
        channel.write({"type": "error", "message": describe(error)})
        return 1
    channel.write({"type": "ready", "seconds": time.monotonic() - started})
    while True:
        message = channel.read()
        if message is None or message.get("type") == "shutdown":
            break
        if message.get("type") == "batch":
            answer = operator.run(message)
            try:
                channel.write(answer)
            except (TypeError, ValueError, OverflowError) as error:
                # A result MessagePack cannot carry (an object of a class of the user's).
                channel.write({"type": "error", "batch": message["batch"],
                               "message": "cannot send the results: %s" % error})
    close = getattr(operator.instance, "close", None)
    if callable(close):
        close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Python operators with every behaviour tests/e2e/python_operators.sh needs: items that fail,
batches that fail, a hang, a wrong result type and a constructor that fails."""

import os
import sys
import time


class Measure:
    """The length of each text; "poison-item" fails that item, "poison-batch" the whole batch,
    "hang" never returns. Each construction appends the process id to `log`."""

    def __init__(self, log="", delay=0.0):
        self.delay = delay
        if log:
            with open(log, "a") as out:
                out.write("%d\n" % os.getpid())
        print("measure: loaded", file=sys.stderr)

    def __call__(self, texts):
        time.sleep(self.delay)
        if "poison-batch" in texts:
            raise RuntimeError("this batch holds poison-batch")
        results = []
        for text in texts:
            if text == "hang":
                time.sleep(3600)
            if text == "poison-item":
                results.append(ValueError("cannot measure %r" % text))
            else:
                results.append(len(text))
        return results


class Environment:
    """What the process sees of its placement: threads, GPUs and its name."""

    def __init__(self, **constants):
        pass

    def __call__(self, texts):
        seen = "|".join(os.environ.get(name, "unset") for name in
                        ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "ORCH_CALL",
                         "ORCH_REPLICA"))
        return [seen for _ in texts]


class WrongType:
    def __init__(self, **constants):
        pass

    def __call__(self, texts):
        return ["not a number" for _ in texts]


class SlowStart:
    """A model that takes a minute to load."""

    def __init__(self, **constants):
        time.sleep(60)

    def __call__(self, texts):
        return [len(text) for text in texts]


class BrokenConstructor:
    def __init__(self, **constants):
        raise FileNotFoundError("weights.pt is missing")


class AsyncClient:
    """An asynchronous client (what a user's own HTTP client looks like): one coroutine per
    item, at most `in_flight` of them at once; "poison-item" raises in its coroutine. Each item
    appends "<open at its start>" to `log`, so the test sees how many ran at once."""

    in_flight = 4

    def __init__(self, log="", delay=0.0):
        self.log = log
        self.delay = delay
        self.open = 0

    async def item(self, text):
        import asyncio
        self.open += 1
        if self.log:
            with open(self.log, "a") as out:
                out.write("%d\n" % self.open)
        try:
            await asyncio.sleep(self.delay)
            if text == "poison-item":
                raise ValueError("cannot measure %r" % text)
            return len(text)
        finally:
            self.open -= 1


class AsyncBatch:
    """An `async def __call__`: awaited once per batch."""

    def __init__(self, **constants):
        pass

    async def __call__(self, texts):
        import asyncio
        await asyncio.sleep(0.001)
        if "poison-item" in texts:
            raise RuntimeError("this batch holds poison-item")
        return [len(text) for text in texts]

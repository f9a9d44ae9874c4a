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

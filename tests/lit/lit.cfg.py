# lit configuration for Orch's golden tests: each .orch or .test file carries RUN lines that
# invoke the tools and FileCheck their output.
import os

import lit.formats

config.name = "orch"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".orch", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.orch_lit_exec_root

config.environment["PATH"] = os.pathsep.join(
    [config.orch_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.environment["NO_COLOR"] = "1"
config.substitutions.append(("%examples", os.path.join(config.orch_source_dir, "examples")))

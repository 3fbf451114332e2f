# lit configuration for tool and pass tests (FileCheck, not, split-file).
import os
import lit.formats

config.name = "TPU"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".mlir", ".json"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tpu_obj_root, "tests", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.tpu_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%src_root", config.tpu_src_root))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
# Tests outside tpuc-cli/, tpuc-deploy/ and frontend/ that need the compiler
# say REQUIRES: tpuc.
if os.path.exists(os.path.join(config.tpu_tools_dir, "tpuc")):
    config.available_features.add("tpuc")

# With TPU_TESTS_NO_SKIP=1 (.ci/run) a test that would be unsupported for a
# missing tool is a failure: every tool must have been built.
if os.environ.get("TPU_TESTS_NO_SKIP") == "1":
    for tool in ["tpuc", "tpuc-opt", "tpusim", "tpu-dis", "tpu-asm"]:
        if not os.path.exists(os.path.join(config.tpu_tools_dir, tool)):
            lit_config.fatal("TPU_TESTS_NO_SKIP=1 but %s was not built in %s"
                             % (tool, config.tpu_tools_dir))

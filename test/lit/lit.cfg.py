# lit configuration of the hybridc suite. Build paths come from the generated
# lit.site.cfg.py; run the suite through that (ctest -R lit, ninja check-lit).
import os

import lit.formats

config.name = "hybridc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = [
    "CMakeLists.txt",
    "Inputs",
    "README.md",
    "lit.cfg.py",
    "lit.site.cfg.py",
    "lit.site.cfg.py.in",
]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hybridc_obj_root, "test", "lit")

# hybridc-opt, hybridc and hybrid-run first, then FileCheck, not and count.
config.environment["PATH"] = os.pathsep.join(
    [config.hybridc_tools_dir, config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])

config.substitutions.append(("%fixtures", config.hybridc_fixtures_dir))
config.substitutions.append(("%onnx_node_tests", config.onnx_node_tests_dir))
config.substitutions.append(("%python", config.python_executable))

# Tests can say `REQUIRES: hybridc, hybrid-run` where a configuration may
# lack a tool (HYBRIDC_ENABLE_COMPILER=OFF builds no hybridc).
for tool in ("hybridc", "hybrid-run", "hybrid-rlhf", "hybridc-opt", "onnx-writer"):
    if os.path.exists(os.path.join(config.hybridc_tools_dir, tool)):
        config.available_features.add(tool)

# Tests of scripts that use HF's `tokenizers` (pip) say `REQUIRES: tokenizers`.
import subprocess
if subprocess.run([config.python_executable, "-c", "import tokenizers"],
                  capture_output=True).returncode == 0:
    config.available_features.add("tokenizers")

# Tests that need the reference models say `REQUIRES: fixtures`.
if os.path.isdir(config.hybridc_fixtures_dir):
    config.available_features.add("fixtures")
if os.path.isdir(config.onnx_node_tests_dir):
    config.available_features.add("onnx-node-tests")

# hybrid_generate_ops(EMIT OUTPUT): writes OUTPUT from ops.py, the one
# definition of every hrt command (gen_ops.py --emit EMIT). Each layer
# generates the forms it needs in its own directory; Python 3's standard
# library is all it takes, so the runtime-only build needs no LLVM.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(HYBRID_OPS_DIR ${CMAKE_CURRENT_LIST_DIR} CACHE INTERNAL
    "runtime/base/ops: ops.py and its generator")
set(HYBRID_OPS_PYTHON ${Python3_EXECUTABLE} CACHE INTERNAL
    "the Python that runs gen_ops.py")

function(hybrid_generate_ops emit output)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${HYBRID_OPS_PYTHON} ${HYBRID_OPS_DIR}/gen_ops.py --emit ${emit}
            -o ${output}
    DEPENDS ${HYBRID_OPS_DIR}/gen_ops.py ${HYBRID_OPS_DIR}/ops.py
            ${HYBRID_OPS_DIR}/opdsl.py
    COMMENT "Generating ${emit} from runtime/base/ops/ops.py"
    VERBATIM)
endfunction()

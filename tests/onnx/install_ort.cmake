# The set-up of the ONNX Runtime tests: npm's onnxruntime-node (its Linux binary is in
# the package, so --ignore-scripts: nothing is downloaded or built at install time),
# installed once into DIR.  No npm, or no registry: a message, and the tests skip.
#
#   cmake -DDIR=<build>/onnxruntime -P install_ort.cmake
set(package onnxruntime-node@1.31.1)
if(EXISTS ${DIR}/node_modules/onnxruntime-node/package.json)
  return()
endif()
find_program(NPM npm)
if(NOT NPM)
  message("npm not found: the ONNX Runtime tests will be skipped")
  return()
endif()
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${NPM} install --ignore-scripts --no-audit --no-fund --prefix ${DIR} ${package}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
if(NOT rc EQUAL 0)
  message("npm install ${package} failed (no registry?): the ONNX Runtime tests will be skipped\n${err}")
  file(REMOVE_RECURSE ${DIR}/node_modules/onnxruntime-node)
endif()

# Writes the text of INPUT into OUTPUT as a C++ raw string literal, so that a
# file can be compiled into a binary: `const char x[] =\n#include "OUTPUT"\n;`.
# Run at build time: cmake -DINPUT=... -DOUTPUT=... -P EmbedText.cmake
set(delimiter "tpusim_cfg")  # at most 16 characters (C++ raw strings)
file(READ "${INPUT}" content)
string(FIND "${content}" ")${delimiter}" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains ')${delimiter}' and cannot be embedded")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by EmbedText.cmake; do not edit.\n"
  "R\"${delimiter}(${content})${delimiter}\"\n")
# Replace only when the text changed, so dependents are not rebuilt needlessly.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

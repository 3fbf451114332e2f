//===- fuzz_tflite.cpp - .tflite models from arbitrary bytes --------------===//
//
// The TFLite reader (compiler/lib/Frontend/Tflite/TfliteReader.cpp, the
// part of the TFLite frontend that touches the file's bytes) either throws
// tpu::Error or returns a model whose every invariant the importer relies
// on holds: tensor indices in range (or -1 for an omitted input), each
// constant's bytes inside the file and exactly its shape's size, one
// producer per tensor, producers before users, subgraph calls in range.
// Every constant byte is read so that AddressSanitizer sees a bad span.
//
//===----------------------------------------------------------------------===//
#include "TfliteReader.h"

#include "tpu/isa/Error.h"

#include <cstdio>
#include <cstdlib>

using namespace tpuc::frontend::tflite;

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "fuzz_tflite: %s\n", what);
  std::abort();
}

void check(const Model &m) {
  const uint8_t *begin = m.bytes.data(), *end = begin + m.bytes.size();
  if (m.subgraphs.empty())
    broken("a model without subgraphs was accepted");
  for (const Subgraph &sg : m.subgraphs) {
    size_t n = sg.tensors.size();
    unsigned sum = 0;
    for (const Tensor &t : sg.tensors) {
      if (!t.isConstant() || t.size == 0)
        continue;
      if (t.data < begin || t.data + t.size > end)
        broken("constant data outside the file");
      size_t count = 1;
      for (int64_t d : t.shape)
        count *= static_cast<size_t>(d);
      if (count * typeSize(t.type) != t.size)
        broken("constant size does not match its shape");
      for (size_t k = 0; k < t.size; ++k)
        sum += t.data[k];
    }
    (void)sum;
    std::vector<int> position(n, -1);
    int k = 0;
    for (const Operator &op : sg.ops) {
      (void)describe(sg, op);
      for (int32_t t : op.inputs) {
        if (t < -1 || t >= static_cast<int32_t>(n))
          broken("operator input out of range");
        if (t >= 0 && sg.tensors[static_cast<size_t>(t)].producer >= 0 &&
            position[static_cast<size_t>(t)] < 0)
          broken("an input is read before its producer ran");
      }
      for (int32_t t : op.outputs) {
        if (t < 0 || t >= static_cast<int32_t>(n))
          broken("operator output out of range");
        if (sg.tensors[static_cast<size_t>(t)].producer != op.index)
          broken("output producer mismatch");
        position[static_cast<size_t>(t)] = k;
      }
      ++k;
    }
    for (int32_t t : sg.inputs)
      if (t < 0 || t >= static_cast<int32_t>(n))
        broken("subgraph input out of range");
    for (int32_t t : sg.outputs)
      if (t < 0 || t >= static_cast<int32_t>(n))
        broken("subgraph output out of range");
    for (int32_t c : sg.callees)
      if (c < 0 || c >= static_cast<int32_t>(m.subgraphs.size()))
        broken("subgraph call out of range");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Model m;
  try {
    m = readModel(std::vector<uint8_t>(data, data + size), "fuzz input");
  } catch (const tpu::Error &) {
    return 0;
  }
  check(m);
  return 0;
}

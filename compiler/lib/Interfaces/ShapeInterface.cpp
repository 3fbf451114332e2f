//===- ShapeInterface.cpp - Result shape inference interface ---------------===//
#include "tpuc/Interfaces/ShapeInterface.h"

namespace tpuc {
#include "tpuc/Interfaces/ShapeInterface.cpp.inc"
} // namespace tpuc

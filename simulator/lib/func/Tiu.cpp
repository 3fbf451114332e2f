//===- Tiu.cpp - TIU dispatch ---------------------------------------------===//

#include "FuncImpl.h"


namespace tpu::sim {

using isa::Prec;
using isa::TiuTask;

void executeTiu(const TiuOp &op, MachineState &m) {
  using namespace detail;
  switch (op.task) {
  case TiuTask::Conv:
    return execConv(op, m);
  case TiuTask::PorD:
    return execPorD(op, m);
  case TiuTask::MM:
    return op.eu >= 4 ? execMM2(op, m) : execMM(op, m);
  case TiuTask::AR:
    return execAR(op, m);
  case TiuTask::RQDQ:
    return execRQDQ(op, m);
  case TiuTask::TransBC:
    return execTransBC(op, m);
  case TiuTask::SG:
    return execSG(op, m);
  case TiuTask::SFU:
    return execSFU(op, m);
  case TiuTask::LIN:
    return execLIN(op, m);
  case TiuTask::CMP:
    return execCMP(op, m);
  case TiuTask::VC:
    return execVC(op, m);
  case TiuTask::Sys:
    return; // nop, end, barriers: nothing to compute.
  default:
    failOp(op, "task type " + std::to_string(unsigned(op.task)) +
                   " cannot be executed");
  }
}

} // namespace tpu::sim

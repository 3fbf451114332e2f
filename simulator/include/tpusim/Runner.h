//===- Runner.h - Running a whole bmodel on the simulator ---------*- C++
//-*-===//
//
// What `tpusim run` does, as a library: check that a bmodel is for the
// simulated chip, place its coefficients and the inputs at the addresses the
// bmodel gives, run every command group of the net in order and read the
// outputs back.
//
// Inputs follow the rule of every tool (tpu::npz::checkInputs): one array
// per input with its shape, no other array, and the tensor's dtype, with
// these conversions:
//  - F32 tensors take float32 arrays, or integer arrays they hold exactly;
//    F16 tensors float16 or float32 arrays, BF16 tensors float32 arrays,
//    converted with isa numerics (round to nearest even);
//  - integer tensors take arrays of their own integer type, or float32
//    arrays, quantised as
//    saturate(round_half_away(x * scale + zero_point)) with the tensor's
//    `scale` and `zero_point` (tpu-mlir stores 1/scale for net inputs, so
//    this divides by the real scale; its model runner rounds the same way).
// Outputs are written as float32 for float tensors and in their own integer
// type otherwise (INT4/UINT4 unpacked to int8/uint8), under the tensor names.
//
// Dumping every op's output (`tpusim run --dump-all`, TPU-MLIR's
// bmodel_checker): the op map tpuc deploy writes beside the bmodel lists,
// per op, the tensors it leaves in DDR (tpu/isa/OpMap.h). Global memory is
// reused between tensors, so each is read right when its op has completed:
// when the op's last command on each engine that runs commands of it has
// executed (Simulator::setCommandObserver). Only GDMA commands write
// global memory and they execute in stream order, so at that moment every
// store of the op has executed and no later op's command has written
// global memory yet; the value read is the op's final output. Dumped
// tensors keep their storage type: float32, float16, bfloat16 as float32
// (numpy has no bfloat16; exact), integers in their own type (scale and
// zero point stay in the op map).
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_RUNNER_H
#define TPUSIM_RUNNER_H

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Npz.h"
#include "tpu/isa/OpMap.h"
#include "tpusim/Simulator.h"

#include <memory>
#include <string>
#include <vector>

namespace tpu::sim {

/// Bounds on one ModelRunner::run().
struct RunOptions {
  /// The most commands (both engines, end commands included) the run may
  /// execute; 0: no limit. A run over budget stops before the group that
  /// would exceed it, with an Error naming that group and the budget.
  uint64_t maxCommands = 0;
};

class ModelRunner {
public:
  /// Picks net `netName` (the first net when empty) and its first stage,
  /// checks the model's chip against `cfg.chip.name` (or Sophgo's alias for
  /// it), that the machine the model records (if any) needs no more lanes,
  /// local memory per lane or banks than `cfg.chip` has, and that every net
  /// is static TPU work, and loads the coefficients.
  /// `model` must outlive the runner. Throws Error.
  ModelRunner(const isa::bmodel::Model &model, const SimConfig &cfg,
              SimMode mode, const std::string &netName = "");

  const isa::bmodel::Net &net() const { return *net_; }
  const isa::bmodel::Stage &stage() const { return *stage_; }

  /// Converts and places every input tensor. Throws Error naming an input
  /// that is missing from `inputs`, whose shape differs, or whose values do
  /// not fit the tensor's type.
  void setInputs(const npz::Npz &inputs);
  /// Runs every command group of the stage in order. Throws SimError, or
  /// Error when `options` bound the run and it would exceed them.
  void run(const RunOptions &options = {});
  /// The output tensors as numpy arrays (see the file comment).
  npz::Npz outputs() const;

  /// Captures every tensor `map` lists during run() (see the file comment;
  /// `map` must have passed isa::checkOpMap for this stage). Full and
  /// functional modes only; throws Error otherwise or when the map lists
  /// no tensor (an op map from before tensors were listed).
  void enableDump(const isa::OpMap &map);
  /// With enableDump, after run(): the captured tensors, ops in op map
  /// order (program order), each op's tensors in their order.
  npz::Npz dump() const;
  /// With enableDump: the ops that never completed (no command of theirs
  /// in the bmodel), whose tensors are missing from dump().
  std::vector<std::string> undumpedOps() const;
  /// Debugging (tpusim run --debug-corrupt-op): when op `name` has
  /// completed, flips the lowest bit of the first byte of its first tensor
  /// in global memory, before the dump reads it, so that a dump comparison
  /// must find `name` as the first op that departs. Needs enableDump first;
  /// throws Error when the op map has no op or tensor of that name.
  void corruptAfter(const std::string &name);

  Simulator &simulator() { return *sim_; }
  const Simulator &simulator() const { return *sim_; }

private:
  /// Throws unless every IO tensor lies in the stage's activation memory.
  void checkIoPlacement() const;
  /// Throws when the stage and its single subnet disagree on IO or groups.
  void checkSubnetCopies() const;
  /// Throws when a command sets a reserved bit.
  void checkReservedBits() const;

  const isa::bmodel::Net *net_ = nullptr;
  const isa::bmodel::Stage *stage_ = nullptr;
  std::unique_ptr<Simulator> sim_;
  struct Dump;
  std::shared_ptr<Dump> dump_;
};

/// `base` with the machine the bmodel records (isa::bmodel::Model::machine)
/// applied on top: what tpusim simulates unless --config or -p override it.
/// `base` unchanged for a bmodel that records none. Throws Error naming the
/// recorded key that the simulator does not know or whose value is bad.
SimConfig recordedConfig(const isa::bmodel::Model &model,
                         const SimConfig &base);

/// Writes `array` into global memory as tensor `t` (conversion as above);
/// `source` names the npz in messages.
void writeTensor(GlobalMemory &gmem, const isa::bmodel::Tensor &t,
                 const npz::Array &array, const std::string &source);
/// Reads tensor `t` from global memory as a numpy array.
npz::Array readTensor(const GlobalMemory &gmem, const isa::bmodel::Tensor &t);

} // namespace tpu::sim

#endif // TPUSIM_RUNNER_H

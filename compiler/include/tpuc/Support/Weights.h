//===- Weights.h - Weight data of top.Weight ops ----------------*- C++ -*-===//
//
// The data of every top.Weight op is the array of the same name in the
// module's weight file (module attribute top.weight_file, relative to the
// .mlir file; npz via ::tpu::npz). Weights that passes or the importer create
// live in an in-memory store until saveWeights() writes all weights the
// module uses to a new npz file.
//
// The store belongs to the top dialect of the MLIRContext, one entry per
// module. Lookups read the in-memory store first and the file second.
// Passes name new weights with uniqueWeightName (names neither the IR nor
// the file uses), so they never shadow file data another op still reads.
// Set top.weight_file only through saveWeights(): a stale file named early
// would reserve its names.
//
// Entries are keyed by the module operation. Destroying a module while its
// MLIRContext lives on leaves its entry behind, and a later module created
// at the same address would see it: call releaseWeights() before dropping
// a module when the context is reused. The store is not thread-safe:
// patterns that create weights must run at module level, not in parallel
// per function.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_SUPPORT_WEIGHTS_H
#define TPUC_SUPPORT_WEIGHTS_H

#include "tpu/isa/Npz.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tpuc {

namespace top {
class WeightOp;
} // namespace top

/// The weights of one module: the arrays of its weight file (loaded on first
/// use) and the arrays created in memory.
struct ModuleWeights {
  /// Absolute or cwd-relative path of the loaded file ("" if none loaded).
  std::string loadedPath;
  /// The top.weight_file value the file was loaded for.
  std::string loadedAttr;
  bool loaded = false;
  ::tpu::npz::Npz file;
  std::map<std::string, ::tpu::npz::Array> memory;

  /// The array called \p name (memory first, then file) or nullptr.
  const ::tpu::npz::Array *find(llvm::StringRef name) const;
};

/// Per-context registry of module weights (owned by the top dialect).
class WeightRegistry {
public:
  /// The entry of \p module (created empty if new; not loaded).
  ModuleWeights &get(mlir::ModuleOp module);
  /// Forgets \p module's weights (file cache and in-memory arrays).
  void release(mlir::ModuleOp module);

private:
  std::mutex mutex;
  llvm::DenseMap<mlir::Operation *, std::unique_ptr<ModuleWeights>> entries;
};

/// The registry of \p ctx's top dialect (loads the dialect if needed).
WeightRegistry &getWeightRegistry(mlir::MLIRContext *ctx);

/// Forgets \p module's weights (file cache and in-memory arrays); call it
/// before destroying a module whose context lives on.
void releaseWeights(mlir::ModuleOp module);

/// Loads \p module's weight file if not loaded yet (or if top.weight_file
/// changed since). A relative path is resolved against \p baseDir, else the
/// directory of the module's source file, else the working directory. A
/// module without top.weight_file has no file weights. Emits an error on
/// the module and fails if the file cannot be read.
mlir::LogicalResult loadWeights(mlir::ModuleOp module,
                                llvm::StringRef baseDir = "");

/// The stored array of weight \p name of \p module (loading the file if
/// needed); nullptr (and an error on \p module when \p emitErrors) if absent.
const ::tpu::npz::Array *findWeight(mlir::ModuleOp module, llvm::StringRef name,
                                    bool emitErrors = true);

/// The data of \p op as float32 (integer arrays converted). Throws
/// ::tpu::Error naming the weight and the file if the data is missing or its
/// element count differs from the op's type.
std::vector<float> getWeightData(top::WeightOp op);
/// As getWeightData, but reports problems as an error on \p op.
mlir::LogicalResult readWeightData(top::WeightOp op, std::vector<float> &data);

/// A name based on \p base that no top.Weight of \p module and no array of
/// its weight file uses: \p base itself, else base_1, base_2, ...
std::string uniqueWeightName(mlir::ModuleOp module, llvm::StringRef base);

/// Creates a top.Weight op named \p name of type tensor<shape x f32> at the
/// builder's insertion point and stores \p data (float32) in the in-memory
/// store of the enclosing module, replacing an array of that name. The
/// builder must insert inside a module. Throws ::tpu::Error if the element
/// count of \p shape differs from data.size().
top::WeightOp createWeight(mlir::OpBuilder &builder, mlir::Location loc,
                           llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<float> data);
/// As above with an array of any dtype (kept as is in the saved file; read
/// as float). The op's type is tensor<array.shape x f32>.
top::WeightOp createWeight(mlir::OpBuilder &builder, mlir::Location loc,
                           llvm::StringRef name, ::tpu::npz::Array array);

/// Writes every weight \p module uses (each top.Weight name once, in IR
/// order) to \p npzPath and sets top.weight_file to \p attrValue (default:
/// the file name of \p npzPath, for a .mlir written to the same directory).
/// The in-memory arrays are dropped afterwards. Emits an error and fails if
/// a weight is missing or the file cannot be written.
mlir::LogicalResult saveWeights(mlir::ModuleOp module, llvm::StringRef npzPath,
                                llvm::StringRef attrValue = "");

} // namespace tpuc

#endif // TPUC_SUPPORT_WEIGHTS_H

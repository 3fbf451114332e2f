//===- Subcommands.h - Entry points of the tpuc subcommands -----*- C++ -*-===//
//
// `tpuc <subcommand> args...` calls run<Subcommand>(argc, argv) with argv[0]
// set to the subcommand name. Each returns the process exit status (0 on
// success, 1 on any error after printing `tpuc <subcommand>: error: ...`).
// Subcommands parse their own arguments and register no global
// llvm::cl options, so that they cannot clash with each other.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_SUBCOMMANDS_H
#define TPUC_TOOLS_TPUC_SUBCOMMANDS_H

// Global namespace: the signatures are the contract between the files.

/// `tpuc transform`: ONNX model -> top dialect .mlir + weight npz.
int runTransform(int argc, char **argv);

/// `tpuc run model.mlir -i in.npz -o out.npz [--dump-all] [--threads N]`:
/// interprets a top module (Run.cpp).
int runRun(int argc, char **argv);

/// `tpuc compare actual.npz reference.npz [--tolerance C,E]
/// [--max-abs-rel R] [--names a,b]`: per-tensor similarity (Compare.cpp).
int runCompare(int argc, char **argv);

/// `tpuc qtable model_top.mlir --test-input in.npz --mode F16|BF16 -o
/// model.qtable [--margin M]`: the ops a 16-bit mode must keep in F32, as a
/// quantize table for deploy (Qtable.cpp).
int runQtable(int argc, char **argv);

/// `tpuc qtable model_top.mlir --calibration-table T --dataset DIR
/// --expected-cos C -o model.qtable [...]`: the INT8 layers to keep in a
/// float type (mixed precision, QtableMixed.cpp); runQtable hands over to it
/// when --calibration-table is given.
int runQtableMixed(int argc, char **argv);

/// `tpuc calibrate model_top.mlir --dataset DIR --input-num N -o
/// model_cali_table [--method M] [--tune-num K] [--threads T]`: the INT8
/// calibration table of a top module over a dataset (Calibrate.cpp).
int runCalibrate(int argc, char **argv);

/// `tpuc deploy model_top.mlir --quantize F32|F16|BF16 --chip bm1684x -o
/// model.bmodel [--quantize-table FILE] [--test-input in.npz
/// --test-reference ref.npz]`: lowers, assigns addresses and writes the
/// bmodel (Deploy.cpp).
int runDeploy(int argc, char **argv);

/// `tpuc explore SWEEP.toml -o DIR [--jobs N] [--shard I/N]`, `tpuc explore
/// merge DIR... -o DIR [--sweep SWEEP.toml]`: design-space sweeps, each
/// point compiled in memory and simulated in timing mode (Explore.cpp).
int runExplore(int argc, char **argv);

/// `tpuc regress SUITE.toml [-o DIR] [--jobs N] [--shard I/N]
/// [--update-baseline] ...`, `tpuc regress merge DIR... --suite SUITE.toml`:
/// regression suites of deployed models, each case compiled (cached) and
/// simulated, its accuracy and performance checked (Regress.cpp).
int runRegress(int argc, char **argv);

#endif // TPUC_TOOLS_TPUC_SUBCOMMANDS_H

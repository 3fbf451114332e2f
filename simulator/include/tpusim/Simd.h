//===- Simd.h - Run-time choice of the functional kernels' SIMD path -*- C++
//-*-===//
//
// The hot functional kernels (conv, matrix multiply, element conversions)
// exist in three builds of the same source: a portable one (the baseline
// x86-64 or whatever the compiler targets), one compiled for AVX2 and one
// for AVX-512 (F, BW, VL, DQ). A fourth path, AVX-512 with VNNI, is the
// AVX-512 build with the 8-bit conv kernel on byte dot products (vpdpbusd:
// four products per 32-bit lane, where the other builds multiply int16
// pairs). A fifth, AMX, is that path with the 8-bit conv kernel on the
// AMX tiles (tdpbsud: 16 x 16 sums of 64 products per instruction); it
// needs the kernel's permission to use the tile state (Linux 5.16 and
// later), asked for when the path is first looked at. Every path computes
// the same bits: the kernels fix the order of every floating-point
// operation (semantics.md), and integer sums wrap modulo 2^32 whatever the
// order.
//
// The path is chosen once, at the first kernel call, from the CPU
// (__builtin_cpu_supports): the widest the CPU has. The environment
// variable TPUSIM_SIMD=portable|avx2|avx512|avx512vnni|amx|auto, `tpusim run
// --simd` or setSimdPath() force one (tests run every path the machine has).
// Forcing a path the CPU lacks is an error.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_SIMD_H
#define TPUSIM_SIMD_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tpu::sim {

enum class SimdPath { Portable, Avx2, Avx512, Avx512Vnni, Amx };

/// "portable", "avx2", "avx512", "avx512vnni", "amx".
const char *simdPathName(SimdPath p);
/// The path named `name` ("auto" gives the widest available), or nothing.
std::optional<SimdPath> simdPathFromName(const std::string &name);

/// Whether this CPU (and this build, and for AMX the kernel) can run `p`.
bool simdPathAvailable(SimdPath p);
/// Every path this machine can run, narrowest first.
std::vector<SimdPath> availableSimdPaths();

/// The path the kernels use (decided on first use: TPUSIM_SIMD, else the
/// widest available). Throws tpu::Error when TPUSIM_SIMD is not a path name
/// or names a path this CPU lacks.
SimdPath simdPath();
/// Forces `p` for every later kernel call; throws tpu::Error if the CPU
/// lacks it.
void setSimdPath(SimdPath p);

/// Threads the conv and matrix kernels may use (1 = the calling thread
/// only). Default: TPUSIM_THREADS, else the hardware threads (at most 8).
/// Results do not depend on it: threads split output channels, never a sum.
unsigned kernelThreads();
void setKernelThreads(unsigned n);

/// Gives one of the kernels' helper threads background work: it calls
/// step() again and again until it returns false (then drops it), and
/// takes part in kernels again only after that; kernels meanwhile run on
/// the other threads (the calling thread always works on its own kernels,
/// so none waits for the helper). On a machine the kernels keep busy, that
/// shares the cores between the two without a thread more than there are
/// kernel threads. step runs on one thread at a time; it must be safe to
/// call from another thread than the caller's, also after its owner
/// finished the work some other way (it then returns false). A step that
/// throws ends the work (the owner finishes it and meets the error). One
/// piece of background work at a time: a new one replaces the one before.
/// Returns false, keeping nothing, when there is no helper thread
/// (kernelThreads() is 1); the caller then does the work some other way.
bool runOnHelper(std::function<bool()> step);

} // namespace tpu::sim

#endif // TPUSIM_SIMD_H

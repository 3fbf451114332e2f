//===- Dataset.h - Calibration samples from a dataset directory -*- C++ -*-===//
//
// `tpuc calibrate --dataset DIR --input-num N` reads its samples from DIR:
//
//   - Every regular file of DIR (not its subdirectories) whose extension is
//     a sample format is a sample; other files (a README, a list) are
//     skipped. Samples are sorted by file name (byte order) and the first N
//     are taken; with fewer than N the available ones are used and the tool
//     warns (TPU-MLIR's rule); none at all is an error.
//   - `.npz`: the rule of every tool (tpu::npz::checkInputs): one float32
//     array per model input, named as the input, with its shape, no other
//     array. One exception for a model with one input: a file holding a
//     single array is that input whatever the array's name (np.savez(f, x)
//     names it "arr_0"); its shape and dtype are still checked.
//   - Images (.jpg, .jpeg, .png, any case) feed a model with one input:
//     each goes through the preprocessing the module records
//     (top.preprocess, tpuc/Support/Preprocess.h: decode, resize, crop,
//     (x - mean) * scale) into that input, exactly as `tpuc run -i
//     image.png` does; a module without the record takes images as mean 0,
//     scale 1, rgb, nchw. An image that does not decode is an error naming
//     the file. `.bmp` counts as a sample so that it is refused by name
//     (there is no BMP decoder) rather than skipped.
//   - A directory holding both `.npz` samples and images is refused (the
//     error names one file of each): sorted together the two kinds would
//     interleave, and an `.npz` beside images is most often a leftover
//     (e.g. the `_in_f32.npz` `tpuc transform --test-input image.jpg`
//     writes), not a sample meant to count.
//
// A format is a SampleDecoder: a function from one dataset file to the
// model's input arrays; decoderFor() picks it by extension, with the
// image preprocessing bound.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_CALIBRATION_DATASET_H
#define TPUC_CALIBRATION_DATASET_H

#include "tpu/isa/Npz.h"

#include "tpuc/Support/Preprocess.h"

#include <functional>
#include <string>
#include <vector>

namespace tpuc::calibration {

/// The model's inputs of one sample, in the order of the specs, each
/// float32 row-major with the spec's shape.
using SampleInputs = std::vector<std::vector<float>>;

/// Turns one dataset file into the model's inputs. Throws tpu::Error naming
/// the file (and the input) when the file does not fit the specs.
using SampleDecoder = std::function<SampleInputs(
    const std::string &path, const std::vector<::tpu::npz::InputSpec> &specs)>;

/// The samples a dataset directory provides.
struct DatasetFiles {
  /// The selected samples (at most N), sorted by name, as paths.
  std::vector<std::string> files;
  /// How many samples the directory holds (>= files.size()).
  size_t available = 0;
};

/// Lists the samples of \p dir and selects the first \p inputNum (> 0).
/// Throws tpu::Error if \p dir does not exist, is not a directory, holds
/// no sample or mixes .npz samples and images.
DatasetFiles listDataset(const std::string &dir, size_t inputNum);

/// True for the extensions listDataset counts as samples.
bool isSampleFile(const std::string &path);

/// The decoder of \p path's format; images go through \p pre (the
/// module's top.preprocess, or Preprocess{} when it records none; it is
/// completed for the input's shape when the image is read). Throws
/// tpu::Error for a format without a decoder (.bmp).
SampleDecoder decoderFor(const std::string &path, const Preprocess &pre);

/// The `.npz` decoder (the rules above).
SampleInputs decodeNpzSample(const std::string &path,
                             const std::vector<::tpu::npz::InputSpec> &specs);

/// The image decoder: \p specs must hold one input (else an error naming
/// the file and the inputs); the image through \p pre (loadImageInput).
SampleInputs decodeImageSample(const std::string &path,
                               const std::vector<::tpu::npz::InputSpec> &specs,
                               const Preprocess &pre);

} // namespace tpuc::calibration

#endif // TPUC_CALIBRATION_DATASET_H

//===- Dataset.cpp - Calibration samples from a dataset directory ---------===//
#include "tpuc/Calibration/Dataset.h"

#include "tpu/isa/Error.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace tpuc::calibration {

namespace {

std::string lowerExtension(const std::string &path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

/// The extensions counted as images: the decoded ones and .bmp (refused
/// by name by decoderFor).
bool isImageExtension(const std::string &ext) {
  return isImagePath("x" + ext) || ext == ".bmp";
}

} // namespace

bool isSampleFile(const std::string &path) {
  std::string ext = lowerExtension(path);
  return ext == ".npz" || isImageExtension(ext);
}

DatasetFiles listDataset(const std::string &dir, size_t inputNum) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw ::tpu::Error("dataset directory '" + dir + "' does not exist");
  if (!fs::is_directory(dir, ec))
    throw ::tpu::Error("dataset '" + dir +
                       "' is not a directory (give a directory of .npz "
                       "files, one sample each)");
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec))
      continue;
    std::string name = it->path().filename().string();
    if (isSampleFile(name))
      names.push_back(name);
  }
  if (ec)
    throw ::tpu::Error("cannot list dataset directory '" + dir +
                       "': " + ec.message());
  if (names.empty())
    throw ::tpu::Error("dataset directory '" + dir +
                       "' holds no sample (.npz files, one array per model "
                       "input, or .jpg/.jpeg/.png images)");
  std::sort(names.begin(), names.end());
  // One kind per dataset: the first file of each kind names the mix.
  auto npz = std::find_if(names.begin(), names.end(), [](const auto &n) {
    return lowerExtension(n) == ".npz";
  });
  auto image = std::find_if(names.begin(), names.end(), [](const auto &n) {
    return isImageExtension(lowerExtension(n));
  });
  if (npz != names.end() && image != names.end())
    throw ::tpu::Error("dataset directory '" + dir + "' mixes .npz samples ('" +
                       *npz + "') and images ('" + *image +
                       "'); a dataset is one or the other: move one kind "
                       "out");
  DatasetFiles out;
  out.available = names.size();
  names.resize(std::min(names.size(), inputNum));
  for (const std::string &n : names)
    out.files.push_back((fs::path(dir) / n).string());
  return out;
}

SampleDecoder decoderFor(const std::string &path, const Preprocess &pre) {
  std::string ext = lowerExtension(path);
  if (ext == ".npz")
    return decodeNpzSample;
  if (isImagePath(path))
    return [pre](const std::string &file,
                 const std::vector<::tpu::npz::InputSpec> &specs) {
      return decodeImageSample(file, specs, pre);
    };
  if (ext == ".bmp")
    throw ::tpu::Error("'" + path +
                       "': BMP images are not supported (PNG and JPEG are)");
  throw ::tpu::Error("'" + path +
                     "': not a dataset sample (.npz, .jpg, .jpeg, .png)");
}

SampleInputs decodeImageSample(const std::string &path,
                               const std::vector<::tpu::npz::InputSpec> &specs,
                               const Preprocess &pre) {
  if (specs.size() != 1) {
    std::string names;
    for (const ::tpu::npz::InputSpec &s : specs)
      names += (names.empty() ? "" : ", ") + s.name;
    throw ::tpu::Error("'" + path +
                       "' is an image: it feeds a model with one input, this "
                       "one has " +
                       std::to_string(specs.size()) + " (" + names +
                       "); give .npz samples");
  }
  llvm::Expected<std::vector<float>> data =
      loadImageInput(path, pre, specs[0].shape);
  if (!data)
    throw ::tpu::Error(llvm::toString(data.takeError()) + " (model input '" +
                       specs[0].name + "')");
  SampleInputs inputs;
  inputs.push_back(std::move(*data));
  return inputs;
}

SampleInputs decodeNpzSample(const std::string &path,
                             const std::vector<::tpu::npz::InputSpec> &specs) {
  ::tpu::npz::Npz npz = ::tpu::npz::readNpz(path);
  // A one-input model takes a file's single array whatever its name.
  if (specs.size() == 1 && npz.size() == 1 &&
      !npz.contains(specs[0].name)) {
    ::tpu::npz::Npz renamed;
    renamed.setSource(npz.source());
    renamed.set(specs[0].name, npz.entries()[0].second);
    npz = std::move(renamed);
  }
  ::tpu::npz::checkInputs(npz, specs, path);
  SampleInputs inputs;
  inputs.reserve(specs.size());
  for (const ::tpu::npz::InputSpec &s : specs)
    inputs.push_back(npz.find(s.name)->toFloat());
  return inputs;
}

} // namespace tpuc::calibration

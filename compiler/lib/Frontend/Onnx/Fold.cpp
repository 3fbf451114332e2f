//===- Fold.cpp - Import-time evaluation of ONNX ops on constants ---------===//

#include "Fold.h"

#include "tpu/isa/Error.h"

#include <algorithm>
#include <limits>

namespace tpuc::frontend {

namespace {

/// Calls \p fn(outIndex, coords) for every element of \p shape in row-major
/// order.
template <typename Fn> void forEachIndex(llvm::ArrayRef<int64_t> shape, Fn fn) {
  int64_t n = numElements(shape);
  std::vector<int64_t> coords(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(k, coords);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++coords[d] < shape[d])
        break;
      coords[d] = 0;
    }
  }
}

} // namespace

ConstTensor
foldElementwise(llvm::ArrayRef<const ConstTensor *> inputs, ElemType outType,
                llvm::function_ref<double(llvm::ArrayRef<double>)> floatFn,
                llvm::function_ref<int64_t(llvm::ArrayRef<int64_t>)> intFn,
                const std::string &what) {
  Shape outShape;
  bool allInt = true;
  for (const ConstTensor *t : inputs) {
    outShape = broadcastShapes(outShape, t->getShape(), what);
    allInt &= !t->isFloat();
  }
  std::vector<std::vector<int64_t>> maps;
  for (const ConstTensor *t : inputs)
    maps.push_back(broadcastIndices(t->getShape(), outShape));
  ConstTensor out = ConstTensor::filled(outShape, 0, outType);
  int64_t n = numElements(outShape);
  std::vector<int64_t> iargs(inputs.size());
  std::vector<double> fargs(inputs.size());
  for (int64_t k = 0; k < n; ++k) {
    if (allInt) {
      for (size_t i = 0; i < inputs.size(); ++i)
        iargs[i] = inputs[i]->getInt(maps[i][k]);
      out.setInt(k, intFn(iargs));
    } else {
      for (size_t i = 0; i < inputs.size(); ++i)
        fargs[i] = inputs[i]->getDouble(maps[i][k]);
      out.set(k, floatFn(fargs));
    }
  }
  return out;
}

ConstTensor takeElements(const ConstTensor &src, Shape outShape,
                         const std::vector<int64_t> &srcIndex) {
  ConstTensor out = ConstTensor::filled(std::move(outShape), 0, src.getType());
  for (size_t k = 0; k < srcIndex.size(); ++k) {
    if (src.isFloat())
      out.set(static_cast<int64_t>(k), src.getDouble(srcIndex[k]));
    else
      out.setInt(static_cast<int64_t>(k), src.getInt(srcIndex[k]));
  }
  return out;
}

ConstTensor foldTranspose(const ConstTensor &src,
                          llvm::ArrayRef<int64_t> perm) {
  const Shape &in = src.getShape();
  Shape outShape;
  for (int64_t p : perm)
    outShape.push_back(in[p]);
  std::vector<int64_t> inStrides = stridesOf(in);
  std::vector<int64_t> index(numElements(outShape));
  forEachIndex(outShape, [&](int64_t k, const std::vector<int64_t> &c) {
    int64_t off = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      off += c[d] * inStrides[perm[d]];
    index[k] = off;
  });
  return takeElements(src, outShape, index);
}

ConstTensor foldSlice(const ConstTensor &src, llvm::ArrayRef<int64_t> starts,
                      llvm::ArrayRef<int64_t> steps, Shape outShape) {
  std::vector<int64_t> inStrides = stridesOf(src.getShape());
  std::vector<int64_t> index(numElements(outShape));
  forEachIndex(outShape, [&](int64_t k, const std::vector<int64_t> &c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d)
      off += (starts[d] + c[d] * steps[d]) * inStrides[d];
    index[k] = off;
  });
  return takeElements(src, std::move(outShape), index);
}

ConstTensor foldConcat(llvm::ArrayRef<const ConstTensor *> inputs,
                       int64_t axis) {
  Shape outShape = inputs.front()->getShape();
  outShape[axis] = 0;
  for (const ConstTensor *t : inputs)
    outShape[axis] += t->getShape()[axis];
  ConstTensor out = ConstTensor::filled(outShape, 0, inputs.front()->getType());
  int64_t outer =
      numElements(llvm::ArrayRef<int64_t>(outShape).take_front(axis));
  int64_t inner =
      numElements(llvm::ArrayRef<int64_t>(outShape).drop_front(axis + 1));
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor *t : inputs) {
      int64_t chunk = t->getShape()[axis] * inner;
      for (int64_t j = 0; j < chunk; ++j, ++k) {
        int64_t s = o * chunk + j;
        if (t->isFloat())
          out.set(k, t->getDouble(s));
        else
          out.setInt(k, t->getInt(s));
      }
    }
  }
  return out;
}

ConstTensor foldGather(const ConstTensor &data, const ConstTensor &indices,
                       int64_t axis, const std::string &what) {
  const Shape &in = data.getShape();
  Shape outShape(in.begin(), in.begin() + axis);
  outShape.insert(outShape.end(), indices.getShape().begin(),
                  indices.getShape().end());
  outShape.insert(outShape.end(), in.begin() + axis + 1, in.end());
  int64_t outer = numElements(llvm::ArrayRef<int64_t>(in).take_front(axis));
  int64_t inner = numElements(llvm::ArrayRef<int64_t>(in).drop_front(axis + 1));
  int64_t dim = in[axis];
  std::vector<int64_t> index;
  index.reserve(numElements(outShape));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < indices.size(); ++i) {
      int64_t idx = indices.getInt(i);
      if (idx < -dim || idx >= dim)
        throw tpu::Error(what + ": index " + std::to_string(idx) +
                         " is out of range for an axis of size " +
                         std::to_string(dim));
      if (idx < 0)
        idx += dim;
      for (int64_t j = 0; j < inner; ++j)
        index.push_back((o * dim + idx) * inner + j);
    }
  }
  return takeElements(data, outShape, index);
}

ConstTensor foldBroadcast(const ConstTensor &src, Shape outShape) {
  std::vector<int64_t> index = broadcastIndices(src.getShape(), outShape);
  return takeElements(src, std::move(outShape), index);
}

ConstTensor foldTile(const ConstTensor &src, llvm::ArrayRef<int64_t> repeats) {
  const Shape &in = src.getShape();
  Shape outShape;
  for (size_t d = 0; d < in.size(); ++d)
    outShape.push_back(in[d] * repeats[d]);
  std::vector<int64_t> inStrides = stridesOf(in);
  std::vector<int64_t> index(numElements(outShape));
  forEachIndex(outShape, [&](int64_t k, const std::vector<int64_t> &c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d)
      off += (c[d] % in[d]) * inStrides[d];
    index[k] = off;
  });
  return takeElements(src, std::move(outShape), index);
}

ConstTensor foldReduce(const ConstTensor &src, llvm::ArrayRef<int64_t> axes,
                       bool keepDims, ReduceKind kind) {
  const Shape &in = src.getShape();
  Shape kept = in;
  for (int64_t a : axes)
    kept[a] = 1;
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in[a];
  int64_t n = numElements(kept);
  std::vector<double> facc(n);
  std::vector<int64_t> iacc(n);
  double finit = 0;
  int64_t iinit = 0;
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    break;
  case ReduceKind::Prod:
    finit = 1;
    iinit = 1;
    break;
  case ReduceKind::Max:
    finit = -std::numeric_limits<double>::infinity();
    iinit = std::numeric_limits<int64_t>::min();
    break;
  case ReduceKind::Min:
    finit = std::numeric_limits<double>::infinity();
    iinit = std::numeric_limits<int64_t>::max();
    break;
  }
  std::fill(facc.begin(), facc.end(), finit);
  std::fill(iacc.begin(), iacc.end(), iinit);
  std::vector<int64_t> map = broadcastIndices(kept, in);
  bool isFloat = src.isFloat();
  for (int64_t k = 0; k < src.size(); ++k) {
    int64_t o = map[k];
    if (isFloat) {
      double v = src.getDouble(k);
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean:
        facc[o] += v;
        break;
      case ReduceKind::Prod:
        facc[o] *= v;
        break;
      case ReduceKind::Max:
        facc[o] = std::max(facc[o], v);
        break;
      case ReduceKind::Min:
        facc[o] = std::min(facc[o], v);
        break;
      }
    } else {
      int64_t v = src.getInt(k);
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean:
        iacc[o] += v;
        break;
      case ReduceKind::Prod:
        iacc[o] *= v;
        break;
      case ReduceKind::Max:
        iacc[o] = std::max(iacc[o], v);
        break;
      case ReduceKind::Min:
        iacc[o] = std::min(iacc[o], v);
        break;
      }
    }
  }
  Shape outShape;
  for (size_t d = 0; d < in.size(); ++d)
    if (keepDims || !llvm::is_contained(axes, static_cast<int64_t>(d)))
      outShape.push_back(kept[d]);
  if (isFloat) {
    if (kind == ReduceKind::Mean)
      for (double &v : facc)
        v /= static_cast<double>(count);
    return ConstTensor::ofDoubles(outShape, std::move(facc), src.getType());
  }
  if (kind == ReduceKind::Mean)
    for (int64_t &v : iacc)
      v /= count;
  return ConstTensor::ofInts(outShape, std::move(iacc), src.getType());
}

} // namespace tpuc::frontend

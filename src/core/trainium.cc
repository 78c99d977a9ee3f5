/*!
 * \file trainium.cc
 * \brief Trainium layouts: partition (P) / free (F) tiles and their PSUM form (PSUM banks of 512 elements, 8 banks).
 */
#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {
namespace {

constexpr int64_t kPartitions = 128;

}  // namespace

TileLayout Trainium(const std::string& annotation, const std::vector<int64_t>& shape) {
  if (annotation.size() != shape.size()) {
    FailValue("trainium: annotation '", annotation, "' has ", annotation.size(), " letters but shape ",
              ShapeString(shape), " has ", shape.size(), " dimensions");
  }
  if (annotation.find_first_not_of("PF") != std::string::npos) {
    FailValue("trainium: annotation '", annotation, "' must consist of 'P' and 'F'");
  }
  ShapeSize(shape, "trainium shape");
  int64_t partitions = 1;
  std::vector<size_t> p_dims;
  for (size_t d = 0; d < annotation.size(); ++d) {
    if (annotation[d] == 'P') {
      partitions = CheckedMul(partitions, shape[d]);
      p_dims.push_back(d);
    }
  }
  // One partition dimension wider than the 128 partitions splits: its high part becomes the outermost free
  // dimension, placed just before the 128 partitions it leaves.
  const bool split = p_dims.size() == 1 && partitions > kPartitions;
  if (split && !Divides(kPartitions, partitions)) {
    FailValue("trainium: the partition dimension ", partitions, " must be <= 128 or a multiple of 128");
  }
  if (!split && partitions > kPartitions) {
    FailValue("trainium: the partition dimensions of ", ShapeString(shape), " hold ", partitions,
              " partitions, more than 128");
  }
  // Row-major strides per axis, over that axis's dimensions in order (the split-off high part first on F).
  struct Dim {
    char kind;
    int64_t extent;
  };
  std::vector<Dim> positional;
  for (size_t d = 0; d < annotation.size(); ++d) {
    if (split && d == p_dims[0]) {
      positional.push_back({'F', CheckedDiv(partitions, kPartitions)});
      positional.push_back({'P', kPartitions});
    } else {
      positional.push_back({annotation[d], shape[d]});
    }
  }
  std::vector<size_t> stride_order;  // positions, in the order strides are assigned from outermost
  if (split) stride_order.push_back(p_dims[0]);
  for (size_t i = 0; i < positional.size(); ++i) {
    if (!(split && i == p_dims[0])) stride_order.push_back(i);
  }
  std::vector<int64_t> strides(positional.size(), 1);
  for (char kind : {'P', 'F'}) {
    int64_t stride = 1;
    for (size_t k = stride_order.size(); k-- > 0;) {
      size_t i = stride_order[k];
      if (positional[i].kind != kind) continue;
      strides[i] = stride;
      stride = CheckedMul(stride, positional[i].extent);
    }
  }
  LayoutParts parts;
  for (size_t i = 0; i < positional.size(); ++i) {
    parts.shard.push_back({positional[i].extent, strides[i], Axis::Get(std::string(1, positional[i].kind))});
  }
  return parts.Build();
}

TileLayout ToPsum(const TileLayout& layout) {
  LayoutParts parts = LayoutParts::Of(layout), out;
  const Axis f = Axis::Get("F"), bank = Axis::Get("Bank");
  for (const IterValue& it : parts.shard) {
    if (!it.axis.same_as(f)) {
      out.shard.push_back(it);
    } else if (it.stride > 0 && Divides(kPsumBankElements, it.stride)) {
      out.shard.push_back({it.extent, CheckedDiv(it.stride, kPsumBankElements), bank});
    } else if (it.stride > 0 && Divides(it.stride, kPsumBankElements)) {
      int64_t per_bank = CheckedDiv(kPsumBankElements, it.stride);
      if (it.extent < per_bank) {
        out.shard.push_back(it);
      } else if (Divides(per_bank, it.extent)) {
        out.shard.push_back({CheckedDiv(it.extent, per_bank), 1, bank});
        out.shard.push_back({per_bank, it.stride, f});
      } else {
        FailValue("to_psum: F iter ", it.extent, ":", it.stride, " does not split into banks of ", kPsumBankElements);
      }
    } else {
      FailValue("to_psum: F stride ", it.stride, " neither divides nor is a multiple of the bank size ",
                kPsumBankElements);
    }
  }
  for (const IterValue& it : parts.replica) {
    if (it.axis.same_as(f)) FailValue("to_psum: replicas on the F axis are not supported");
    out.replica.push_back(it);
  }
  for (const auto& [axis, value] : parts.offset) {
    if (axis.same_as(f)) FailValue("to_psum: an offset on the F axis is not supported");
    out.AddOffset(axis, value);
  }
  TileLayout psum = out.Build();
  if (psum->StaticSpan(std::string("Bank")) > kPsumBanks) {
    FailValue("to_psum: ", LayoutString(layout), " needs ", psum->StaticSpan(std::string("Bank")),
              " PSUM banks; there are ", kPsumBanks);
  }
  return psum;
}

}  // namespace tirx_layout

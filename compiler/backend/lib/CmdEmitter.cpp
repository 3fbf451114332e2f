//===- CmdEmitter.cpp - Command streams with id synchronisation -----------===//
//
// Ids and dependencies follow isa/docs/bm1684x.md 6: each engine runs its stream in
// order; a command waits until the other engine has completed the command
// whose id is its cmd_id_dep (and therefore everything before it).
//
// Local-memory hazards are tracked per granule of localAlign bytes (the
// same offsets in every lane: the kernels always use all lanes alike). For
// each granule we keep, per engine, the id of the last command that wrote
// it and of the last command that read or wrote it. A command then waits
// for the other engine's last conflicting command; conflicts with its own
// engine are ordered by the stream itself.
//
//===----------------------------------------------------------------------===//

#include "tpuc/Backend/Backend.h"

#include <algorithm>

namespace tpu::backend {

namespace {

/// Fraction of the id space after which nearIdLimit() says "start a new
/// group": leaves room for the largest single kernel (an op emits far fewer
/// than 2^16 commands per engine for every shape the kernels accept).
constexpr uint32_t kIdHeadroom = 1u << 16;

/// cmd_id_en as a published BM1684X register dump shows it (isa/docs/bm1684x.md
/// 4.4: meaning not public, value 1 in the dump). Set on every command.
constexpr uint64_t kCmdIdEn = 1;

} // namespace

int64_t GTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

uint64_t GTensor::bytes() const {
  return uint64_t(numElements()) * isa::precBits(prec) / 8;
}

class CmdEmitter::Tracker {
public:
  explicit Tracker(const isa::ChipParams &chip)
      : granule_(std::max<uint64_t>(chip.localAlign, 1)),
        granules_(size_t((chip.lmemBytes + granule_ - 1) / granule_)) {
    for (auto *v : {&tiuWrite_, &tiuAccess_, &gdmaWrite_, &gdmaAccess_})
      v->assign(granules_, 0);
  }

  /// The dependency of a command of engine `isTiu` on the other engine.
  uint32_t dependency(bool isTiu, const std::vector<LocalRange> &reads,
                      const std::vector<LocalRange> &writes) const {
    const std::vector<uint32_t> &otherWrite = isTiu ? gdmaWrite_ : tiuWrite_;
    const std::vector<uint32_t> &otherAccess = isTiu ? gdmaAccess_ : tiuAccess_;
    uint32_t dep = 0;
    forGranules(reads, [&](size_t g) { dep = std::max(dep, otherWrite[g]); });
    forGranules(writes, [&](size_t g) { dep = std::max(dep, otherAccess[g]); });
    return dep;
  }

  void record(bool isTiu, uint32_t id, const std::vector<LocalRange> &reads,
              const std::vector<LocalRange> &writes) {
    std::vector<uint32_t> &write = isTiu ? tiuWrite_ : gdmaWrite_;
    std::vector<uint32_t> &access = isTiu ? tiuAccess_ : gdmaAccess_;
    forGranules(reads, [&](size_t g) { access[g] = id; });
    forGranules(writes, [&](size_t g) {
      access[g] = id;
      write[g] = id;
    });
  }

private:
  template <typename Fn>
  void forGranules(const std::vector<LocalRange> &ranges, Fn fn) const {
    for (const LocalRange &r : ranges) {
      if (r.bytes == 0)
        continue;
      size_t first = size_t(r.offset / granule_);
      size_t last = size_t((r.offset + r.bytes - 1) / granule_);
      last = std::min(last, granules_ - 1);
      for (size_t g = first; g <= last; ++g)
        fn(g);
    }
  }

  uint64_t granule_;
  size_t granules_;
  std::vector<uint32_t> tiuWrite_, tiuAccess_, gdmaWrite_, gdmaAccess_;
};

CmdEmitter::CmdEmitter(const isa::ChipParams &chip)
    : chip_(chip), tracker_(std::make_unique<Tracker>(chip)) {}
CmdEmitter::~CmdEmitter() = default;
CmdEmitter::CmdEmitter(CmdEmitter &&) noexcept = default;
CmdEmitter &CmdEmitter::operator=(CmdEmitter &&) noexcept = default;

uint32_t CmdEmitter::tiu(isa::RawCommand c, uint32_t waitGdmaId) {
  if (c.engine() != isa::Engine::Tiu)
    throw Error(std::string("CmdEmitter::tiu: ") + c.info().name +
                " is not a TIU command");
  if (waitGdmaId > lastGdma())
    throw Error("CmdEmitter::tiu: dependency on GDMA id " +
                std::to_string(waitGdmaId) + " which is not emitted yet");
  uint32_t id = lastTiu() + 1;
  if (id >= (1u << chip_.idWidth))
    throw Error("CmdEmitter: more TIU commands than " +
                std::to_string(chip_.idWidth) +
                "-bit ids allow in one group; start a new group");
  c.set("cmd_id", id);
  c.set("cmd_id_dep", waitGdmaId);
  if (c.has("cmd_id_en"))
    c.set("cmd_id_en", kCmdIdEn);
  tiuTags_.push_back(tag_);
  tiuCmds_.push_back(c);
  return id;
}

uint32_t CmdEmitter::gdma(isa::RawCommand c, uint32_t waitTiuId) {
  if (c.engine() != isa::Engine::Gdma)
    throw Error(std::string("CmdEmitter::gdma: ") + c.info().name +
                " is not a GDMA command");
  if (waitTiuId > lastTiu())
    throw Error("CmdEmitter::gdma: dependency on TIU id " +
                std::to_string(waitTiuId) + " which is not emitted yet");
  uint32_t id = lastGdma() + 1;
  if (id >= (1u << chip_.idWidth))
    throw Error("CmdEmitter: more GDMA commands than " +
                std::to_string(chip_.idWidth) +
                "-bit ids allow in one group; start a new group");
  c.set("cmd_id", id);
  c.set("cmd_id_dep", waitTiuId);
  if (c.has("cmd_id_en"))
    c.set("cmd_id_en", kCmdIdEn);
  gdmaTags_.push_back(tag_);
  gdmaCmds_.push_back(c);
  return id;
}

uint32_t CmdEmitter::tiuAccess(isa::RawCommand c,
                               const std::vector<LocalRange> &reads,
                               const std::vector<LocalRange> &writes) {
  uint32_t id = tiu(std::move(c), tracker_->dependency(true, reads, writes));
  tracker_->record(true, id, reads, writes);
  return id;
}

uint32_t CmdEmitter::gdmaAccess(isa::RawCommand c,
                                const std::vector<LocalRange> &reads,
                                const std::vector<LocalRange> &writes) {
  uint32_t id = gdma(std::move(c), tracker_->dependency(false, reads, writes));
  tracker_->record(false, id, reads, writes);
  return id;
}

bool CmdEmitter::nearIdLimit() const {
  uint32_t limit = (1u << chip_.idWidth) - kIdHeadroom;
  return lastTiu() >= limit || lastGdma() >= limit;
}

std::pair<std::vector<isa::RawCommand>, std::vector<isa::RawCommand>>
CmdEmitter::streamsWithEnd() const {
  std::vector<isa::RawCommand> tiu = tiuCmds_, gdma = gdmaCmds_;
  uint32_t tiuEnd = uint32_t(tiu.size()) + 1;
  uint32_t gdmaEnd = uint32_t(gdma.size()) + 1;
  // Each end command waits for the other engine's last real command, so
  // the group is finished only when both engines are.
  isa::RawCommand te = isa::makeTiuEnd(tiuEnd, uint32_t(gdma.size()));
  isa::RawCommand ge = isa::makeGdmaEnd(gdmaEnd, uint32_t(tiu.size()));
  te.set("cmd_id_en", kCmdIdEn);
  ge.set("cmd_id_en", kCmdIdEn);
  tiu.push_back(te);
  gdma.push_back(ge);
  return {std::move(tiu), std::move(gdma)};
}

isa::bmodel::CmdGroup CmdEmitter::finish() {
  auto [tiu, gdma] = streamsWithEnd();
  isa::bmodel::CmdGroup g;
  g.bdcNum = uint32_t(tiu.size());
  g.gdmaNum = uint32_t(gdma.size());
  g.tiu = isa::packBuffer(tiu);
  g.gdma = isa::packBuffer(gdma);
  tiuCmds_.clear();
  gdmaCmds_.clear();
  lastTiuTags_ = std::move(tiuTags_);
  lastGdmaTags_ = std::move(gdmaTags_);
  lastTiuTags_.push_back(-1); // the end commands
  lastGdmaTags_.push_back(-1);
  tiuTags_.clear();
  gdmaTags_.clear();
  tracker_ = std::make_unique<Tracker>(chip_);
  return g;
}

} // namespace tpu::backend

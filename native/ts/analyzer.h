// The MPEG-TS analyzer core (no N-API here): sync acquisition and resync, per-PID continuity,
// PCR/PTS timing, PSI/SI reassembly and the TR 101 290 priority 1 and 2 indicators.
// One Push() per batch of bytes; all per-stream state lives in this object.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ts/sections.h"

namespace sluice::ts {

constexpr size_t kPacket = 188;
constexpr uint16_t kPidCount = 8192;
constexpr uint16_t kNullPid = 0x1FFF;

struct Options {
  bool dropNull = false;
  bool tr101290 = true;
  bool psiAll = false;
  std::vector<uint16_t> psiPids;
  double pidTimeoutMs = 5000;
  double patTimeoutMs = 500;
  double ptsTimeoutMs = 700;
};

/** ETSI TR 101 290 priority 1 and 2 counters. */
struct Tr101290 {
  uint64_t tsSyncLoss = 0, syncByteError = 0, patError = 0, continuityCountError = 0,
           pmtError = 0, pidError = 0;
  uint64_t transportError = 0, crcError = 0, pcrRepetitionError = 0,
           pcrDiscontinuityIndicatorError = 0, pcrAccuracyError = 0, ptsError = 0, catError = 0;
};

struct PidState {
  bool seen = false;
  bool ccValid = false;
  bool dupSeen = false;
  uint8_t lastCc = 0;
  uint8_t scrambling = 0;
  bool followSections = false;  // PSI/SI PID: reassemble sections
  bool isPmt = false;
  bool isEs = false;       // referenced by a PMT (PID_error watch)
  bool ptsWatch = false;   // audio/video ES (PTS_error watch)
  uint64_t packets = 0, ccErrors = 0, scrambledPackets = 0, transportErrors = 0;
  // PCR
  bool hasPcr = false, pcrValid = false;
  int64_t lastPcr = -1;
  uint64_t lastPcrIndex = 0;
  int64_t refPcr = 0;  // start of the rate reference (since the last discontinuity)
  uint64_t refIndex = 0;
  uint32_t pcrCount = 0;
  double pcrJitterNs = 0;
  // time (caller's ms clock)
  double lastSeenMs = 0, lastPtsMs = 0, lastPmtMs = 0;
  bool hasPts = false;
  // bit rate windows
  // packet counts at the start of the bit-rate windows and at the last sweep
  uint64_t pcrWindowStart = 0, arrivalWindowStart = 0, sweepPackets = 0;
  double bitrate = 0;
  std::unique_ptr<SectionAssembler> sections;
  std::vector<uint8_t> lastSection;  // last section that passed its CRC (repeat detection)
};

struct QueuedSection {
  uint16_t pid;
  uint8_t tableId;
  std::vector<uint8_t> data;
};

struct ProgramInfo {
  uint16_t pnr = 0;
  uint16_t pmtPid = 0;
  int version = -1;
  PmtInfo pmt;
  std::vector<uint8_t> lastPmt;  // raw section, to skip re-parsing repeats
};

struct Counters {
  uint64_t packets = 0, bytes = 0, nullPackets = 0, junkBytes = 0, syncLosses = 0,
           crcErrors = 0, sectionsDropped = 0;
  double pcrBitrate = 0, arrivalBitrate = 0;
};

class Analyzer {
 public:
  explicit Analyzer(Options opts);

  /**
   * Analyse `len` bytes. Kept packets are either the contiguous input range
   * [*zeroCopyBegin, *zeroCopyEnd) (when *copied is false) or appended to `out` (*copied true).
   */
  void Push(const uint8_t* data, size_t len, double nowMs, std::vector<uint8_t>* out,
            bool* copied, size_t* zeroCopyBegin, size_t* zeroCopyEnd);
  void Reset();

  std::vector<QueuedSection> TakeSections();
  /** Sections waiting for TakeSections(). */
  size_t QueuedSections() const { return queue_.size(); }
  const Counters& counters() const { return c_; }
  const Tr101290& tr() const { return tr_; }
  const std::vector<uint16_t>& activePids() const { return activePids_; }
  const PidState& pid(uint16_t p) const { return pids_[p]; }
  const std::map<uint16_t, ProgramInfo>& programs() const { return programs_; }
  const std::map<uint16_t, ServiceInfo>& services() const { return services_; }

 private:
  struct Emit;  // collects kept packets (zero-copy run or copy)
  void Process(const uint8_t* buf, size_t len, double now, Emit* emit, size_t* consumed);
  /** `index`: this packet's slot (the caller counts a run's slots in a register, from index_;
   *  index_ itself is written only before the slow path, which reads it). Returns keep. */
  bool Packet(const uint8_t* p, double now, uint64_t index);
  bool PacketSlow(PidState& st, uint16_t pid, const uint8_t* p, double now);
  void CcError(PidState& st);
  void Pcr(PidState& st, uint16_t pid, int64_t pcr, bool discontinuity);
  void Pes(PidState& st, const uint8_t* payload, size_t len, double now);
  void Section(uint16_t pid, const uint8_t* s, size_t len, double now);
  void OnPat(const uint8_t* s, size_t len, double now);
  void OnPmt(uint16_t pid, const uint8_t* s, size_t len, double now);
  void RebuildRoles(double now);
  void Sweep(double now);            // bit-rate windows, then the indicators below
  void SweepIndicators(double now);  // time-based TR 101 290 indicators
  void SkipSilence(double gapMs);    // a wait with no bytes at all is not a table gap
  PidState& Touch(uint16_t pid);
  bool Queued(uint16_t pid) const;

  Options opts_;
  std::vector<PidState> pids_;
  std::vector<uint16_t> activePids_;
  std::vector<uint8_t> carry_;
  std::vector<uint8_t> work_;
  bool locked_ = false;
  uint64_t index_ = 0;  // packet slots seen while locked (byte clock for PCR accuracy)
  Counters c_;
  Tr101290 tr_;
  std::vector<QueuedSection> queue_;
  std::vector<bool> queuePid_;
  // tables
  int patVersion_ = -1;
  std::map<uint16_t, uint16_t> pat_;  // pnr → PMT PID
  std::map<uint16_t, ProgramInfo> programs_;
  std::map<uint16_t, ServiceInfo> services_;
  std::vector<uint16_t> esPids_;
  bool catSeen_ = false;
  bool scrambledSinceSweep_ = false;
  // time
  bool started_ = false;
  double lastPatMs_ = 0, lastSweepMs_ = 0, lastCatErrMs_ = 0;
  double lastPushMs_ = 0;
  double arrivalWindowStartMs_ = 0;
  uint64_t arrivalWindowBytes_ = 0;
  // PCR window on the first PCR PID seen
  int pcrMaster_ = -1;
  int64_t pcrWindowStart_ = -1;
  uint64_t pcrWindowIndex_ = 0;
};

}  // namespace sluice::ts

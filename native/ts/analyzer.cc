// MPEG-TS analyzer core. See analyzer.h; the indicator definitions follow ETSI TR 101 290
// §5.2.1–5.2.2, with the choices the report leaves open documented in docs/native.md.
#include "ts/analyzer.h"

#include <cstring>

#include "ts/crc32.h"

namespace sluice::ts {
namespace {

constexpr uint8_t kSync = 0x47;
constexpr int64_t kPcrHz = 27000000;
constexpr int64_t kPcrPerMs = kPcrHz / 1000;
constexpr int64_t kPcrWrap = (int64_t{1} << 33) * 300;
constexpr int64_t kPcrRepetitionMax = 40 * kPcrPerMs;       // PCR_repetition_error
constexpr int64_t kPcrDiscontinuityMax = 100 * kPcrPerMs;   // PCR_discontinuity_indicator_error
constexpr double kPcrAccuracyNs = 500;                      // PCR_accuracy_error
constexpr int64_t kPcrAccuracyMinSpan = 100 * kPcrPerMs;    // rate reference needs this much
constexpr int64_t kRateWindow = kPcrHz;                     // 1 s PCR window for bit rates
constexpr double kArrivalWindowMs = 1000;
constexpr double kSweepEveryMs = 5;
constexpr double kCatErrorEveryMs = 500;
constexpr size_t kMaxQueuedSections = 4096;
constexpr size_t kMinLongSection = 12;

constexpr uint16_t kPidPat = 0x0000, kPidCat = 0x0001, kPidNit = 0x0010, kPidSdt = 0x0011,
                   kPidEit = 0x0012, kPidTdt = 0x0014;
constexpr uint8_t kTablePat = 0x00, kTableCat = 0x01, kTablePmt = 0x02, kTableSdtActual = 0x42;

int64_t PcrDelta(int64_t later, int64_t earlier) {
  int64_t d = (later - earlier) % kPcrWrap;
  if (d < 0) d += kPcrWrap;
  return d;  // in [0, wrap); values past wrap/2 mean "went backwards"
}

bool PesHasOptionalHeader(uint8_t streamId) {
  return streamId != 0xBC && streamId != 0xBE && streamId != 0xBF && streamId != 0xF0 &&
         streamId != 0xF1 && streamId != 0xF2 && streamId != 0xF8 && streamId != 0xFF;
}

// Audio and video elementary streams carry a PTS at least every 700 ms; subtitles and data
// streams may legitimately stay silent, so PTS_error watches only these.
bool IsAudioVideo(const EsInfo& es) {
  switch (es.streamType) {
    case 0x01: case 0x02: case 0x03: case 0x04: case 0x0F: case 0x10: case 0x11: case 0x1B:
    case 0x1C: case 0x24: case 0x2D: case 0x33: case 0x42: case 0x81: case 0x87: case 0xEA:
      return true;
    case 0x06:
      for (uint8_t t : es.descriptors)
        if (t == 0x6A || t == 0x7A || t == 0x7B || t == 0x7C) return true;
      return es.registration == "AC-3" || es.registration == "EAC3" ||
             es.registration == "Opus" || es.registration == "HEVC";
    default:
      return false;
  }
}

}  // namespace

// Kept packets: stays a zero-copy [begin, end) run of the input while packets are contiguous,
// switches to copying into `out` at the first gap (a dropped packet) or when input is copied.
struct Analyzer::Emit {
  const uint8_t* base;
  std::vector<uint8_t>* out;
  bool copying;
  size_t begin = 0, end = 0;
  bool any = false;
  /** Packets [from, to) of the input are kept. */
  void Keep(size_t from, size_t to) {
    if (copying) {
      out->insert(out->end(), base + from, base + to);
      return;
    }
    if (!any) {
      begin = from;
      end = to;
      any = true;
    } else if (from == end) {
      end = to;
    } else {
      out->insert(out->end(), base + begin, base + end);
      out->insert(out->end(), base + from, base + to);
      copying = true;
    }
  }
};

Analyzer::Analyzer(Options opts) : opts_(std::move(opts)) { Reset(); }

void Analyzer::Reset() {
  pids_.clear();
  pids_.resize(kPidCount);
  activePids_.clear();
  carry_.clear();
  locked_ = false;
  index_ = 0;
  c_ = Counters();
  tr_ = Tr101290();
  queue_.clear();
  queuePid_.assign(kPidCount, false);
  for (uint16_t p : opts_.psiPids) queuePid_[p] = true;
  patVersion_ = -1;
  pat_.clear();
  programs_.clear();
  esPids_.clear();
  services_.clear();
  catSeen_ = false;
  scrambledSinceSweep_ = false;
  started_ = false;
  lastPatMs_ = lastSweepMs_ = lastCatErrMs_ = arrivalWindowStartMs_ = lastPushMs_ = 0;
  arrivalWindowBytes_ = 0;
  pcrMaster_ = -1;
  pcrWindowStart_ = -1;
  pcrWindowIndex_ = 0;
  for (uint16_t p : {kPidPat, kPidCat, kPidNit, kPidSdt, kPidEit, kPidTdt}) {
    pids_[p].followSections = true;
  }
  for (uint16_t p : opts_.psiPids) pids_[p].followSections = true;
}

PidState& Analyzer::Touch(uint16_t pid) {
  PidState& st = pids_[pid];
  if (!st.seen) {
    st.seen = true;
    activePids_.push_back(pid);
  }
  return st;
}

bool Analyzer::Queued(uint16_t pid) const {
  if (queuePid_[pid]) return true;
  return opts_.psiAll && pids_[pid].followSections;
}

void Analyzer::Push(const uint8_t* data, size_t len, double now, std::vector<uint8_t>* out,
                    bool* copied, size_t* zcBegin, size_t* zcEnd) {
  c_.bytes += len;
  arrivalWindowBytes_ += len;
  if (!started_) {
    started_ = true;
    lastPatMs_ = lastSweepMs_ = lastCatErrMs_ = arrivalWindowStartMs_ = now;
  } else if (opts_.tr101290 && now - lastPushMs_ > opts_.patTimeoutMs) {
    SkipSilence(now - lastPushMs_);
  }
  lastPushMs_ = now;
  size_t consumed = 0;
  if (carry_.empty()) {
    Emit emit{data, out, false};
    Process(data, len, now, &emit, &consumed);
    carry_.assign(data + consumed, data + len);
    *copied = emit.copying;
    *zcBegin = emit.begin;
    *zcEnd = emit.any ? emit.end : emit.begin;
  } else {
    work_.assign(carry_.begin(), carry_.end());
    work_.insert(work_.end(), data, data + len);
    Emit emit{work_.data(), out, true};
    Process(work_.data(), work_.size(), now, &emit, &consumed);
    carry_.assign(work_.begin() + consumed, work_.end());
    *copied = true;
    *zcBegin = *zcEnd = 0;
  }
  if (now - lastSweepMs_ >= kSweepEveryMs) Sweep(now);
}

void Analyzer::Process(const uint8_t* buf, size_t len, double now, Emit* emit, size_t* consumed) {
  size_t pos = 0;
  for (;;) {
    if (!locked_) {
      bool found = false;
      while (pos + 2 * kPacket < len) {
        const void* hit = std::memchr(buf + pos, kSync, len - 2 * kPacket - pos);
        if (!hit) {
          c_.junkBytes += len - 2 * kPacket - pos;
          pos = len - 2 * kPacket;
          break;
        }
        size_t at = static_cast<const uint8_t*>(hit) - buf;
        c_.junkBytes += at - pos;
        pos = at;
        if (buf[pos + kPacket] == kSync && buf[pos + 2 * kPacket] == kSync) {
          found = true;
          break;
        }
        pos++;
        c_.junkBytes++;
      }
      if (!found) break;  // keep the tail: it may start a run of syncs
      locked_ = true;
    }
    if (pos + kPacket > len) break;
    if (buf[pos] == kSync) {
      // A run of aligned packets, kept as whole ranges: the bookkeeping is per run, not per
      // packet (a packet is dropped only for a reason: a null with dropNull, a duplicate …).
      // The packet count runs in a local: as members, index_ and c_.packets were read and
      // written back through memory on every packet (a store-to-load chain the compiler cannot
      // break, since the per-PID counters might alias them), ~40 % of this loop's time.
      size_t run = pos;
      const uint64_t first = index_;
      uint64_t index = first;
      do {
        if (!Packet(buf + pos, now, ++index)) {
          if (pos > run) emit->Keep(run, pos);
          run = pos + kPacket;
        }
        pos += kPacket;
      } while (pos + kPacket <= len && buf[pos] == kSync);
      index_ = index;
      c_.packets += index - first;
      if (pos > run) emit->Keep(run, pos);
      continue;
    }
    // A bad sync byte: one alone is a Sync_byte_error (the packet is dropped); two in a row
    // mean the alignment is lost (TS_sync_loss) and we hunt again from the next byte.
    if (pos + kPacket >= len) break;  // need the next sync position to decide
    if (opts_.tr101290) tr_.syncByteError++;
    if (buf[pos + kPacket] == kSync) {
      index_++;
      pos += kPacket;
      continue;
    }
    if (opts_.tr101290) tr_.tsSyncLoss++;
    c_.syncLosses++;
    locked_ = false;
    pos++;
    c_.junkBytes++;
  }
  *consumed = pos;
}

// The common packet — clear, payload only, no unit start, not a section PID — takes this inline
// path (continuity only); everything else goes to PacketSlow.
inline bool Analyzer::Packet(const uint8_t* p, double now, uint64_t index) {
  const uint16_t pid = static_cast<uint16_t>(((p[1] & 0x1F) << 8) | p[2]);
  PidState& st = pids_[pid];
  if (__builtin_expect(!st.seen, 0)) Touch(pid);
  st.packets++;
  if (pid == kNullPid) {
    c_.nullPackets++;
    return !opts_.dropNull;
  }
  // Fast only with byte 1 free of transport error and unit start (0xC0), and byte 3 clear,
  // without adaptation field and with payload (its top nibble exactly 0x1): one test.
  const unsigned odd = (p[1] & 0xC0u) | ((p[3] & 0xF0u) ^ 0x10u) | st.followSections;
  if (__builtin_expect(odd != 0, 0)) {
    index_ = index;  // the PCR checks read it
    return PacketSlow(st, pid, p, now);
  }
  const uint8_t cc = p[3] & 0x0F;
  st.scrambling = 0;
  if (st.ccValid && cc != ((st.lastCc + 1) & 0x0F)) {
    if (cc == st.lastCc && !st.dupSeen) {
      st.dupSeen = true;
      return true;
    }
    CcError(st);
  }
  st.dupSeen = false;
  st.lastCc = cc;
  st.ccValid = true;
  return true;
}

void Analyzer::CcError(PidState& st) {
  st.ccErrors++;
  tr_.continuityCountError++;
  if (st.sections) st.sections->Reset();
}

bool Analyzer::PacketSlow(PidState& st, uint16_t pid, const uint8_t* p, double now) {
  if (p[1] & 0x80) {  // transport_error_indicator: the header itself is suspect
    st.transportErrors++;
    if (opts_.tr101290) tr_.transportError++;
    return true;
  }
  const uint8_t scrambling = p[3] >> 6;
  st.scrambling = scrambling;
  if (scrambling) {
    st.scrambledPackets++;
    scrambledSinceSweep_ = true;
    if (opts_.tr101290) {
      if (pid == kPidPat) tr_.patError++;
      if (st.isPmt) tr_.pmtError++;
    }
  }
  const uint8_t afc = (p[3] >> 4) & 3;
  const uint8_t cc = p[3] & 0x0F;
  size_t off = 4;
  bool discontinuity = false;
  if (afc & 2) {
    const size_t alen = p[4];
    if ((afc == 3 && alen > 182) || (afc == 2 && alen != 183)) return true;  // malformed
    if (alen > 0) {
      const uint8_t flags = p[5];
      discontinuity = flags & 0x80;
      if ((flags & 0x10) && alen >= 7) {
        const int64_t base = (int64_t{p[6]} << 25) | (int64_t{p[7]} << 17) |
                             (int64_t{p[8]} << 9) | (int64_t{p[9]} << 1) | (p[10] >> 7);
        const int64_t ext = ((p[10] & 1) << 8) | p[11];
        Pcr(st, pid, base * 300 + ext, discontinuity);
      }
    }
    off = 5 + alen;
  }
  if (!(afc & 1)) return true;  // adaptation only (CC does not advance) or reserved
  // Continuity: +1 per payload packet; one repeat of a packet is allowed (duplicate).
  if (!st.ccValid || discontinuity) {
    st.dupSeen = false;
  } else if (cc == ((st.lastCc + 1) & 0x0F)) {
    st.dupSeen = false;
  } else if (cc == st.lastCc && !st.dupSeen) {
    st.dupSeen = true;
    return true;  // a duplicate carries nothing new
  } else {
    CcError(st);
    st.dupSeen = false;
  }
  st.lastCc = cc;
  st.ccValid = true;
  const bool unitStart = p[1] & 0x40;
  if (st.followSections && !scrambling) {
    if (!st.sections) st.sections = std::make_unique<SectionAssembler>();
    st.sections->Feed(p + off, kPacket - off, unitStart, [&](const uint8_t* s, size_t n) {
      Section(pid, s, n, now);
    });
  } else if (unitStart && opts_.tr101290 && !scrambling) {
    Pes(st, p + off, kPacket - off, now);
  }
  return true;
}

void Analyzer::Pcr(PidState& st, uint16_t pid, int64_t pcr, bool discontinuity) {
  st.hasPcr = true;
  if (pcrMaster_ < 0) pcrMaster_ = pid;
  bool restart = !st.pcrValid || discontinuity;
  if (!restart && opts_.tr101290) {
    const int64_t delta = PcrDelta(pcr, st.lastPcr);
    if (delta > kPcrDiscontinuityMax) {  // includes going backwards (delta near the wrap)
      tr_.pcrDiscontinuityIndicatorError++;
      restart = true;
    } else {
      if (delta > kPcrRepetitionMax) tr_.pcrRepetitionError++;
      // PCR_accuracy: compare this PCR with the one the byte clock predicts, the byte clock
      // being the PCR-derived transport rate since the last discontinuity. Only meaningful for
      // a constant-rate (null-padded) multiplex; see docs/native.md.
      const int64_t span = PcrDelta(pcr, st.refPcr);
      const uint64_t spanPackets = index_ - st.refIndex;
      if (span >= kPcrAccuracyMinSpan && spanPackets > 0 && c_.nullPackets > 0) {
        const double ticksPerPacket = static_cast<double>(span) / static_cast<double>(spanPackets);
        const double expected = ticksPerPacket * static_cast<double>(index_ - st.lastPcrIndex);
        double devNs = (static_cast<double>(delta) - expected) * 1e9 / kPcrHz;
        if (devNs < 0) devNs = -devNs;
        if (devNs > st.pcrJitterNs) st.pcrJitterNs = devNs;
        if (devNs > kPcrAccuracyNs) tr_.pcrAccuracyError++;
      }
    }
  }
  if (restart) {
    st.refPcr = pcr;
    st.refIndex = index_;
  }
  if (pid == pcrMaster_) {
    if (restart || pcrWindowStart_ < 0) {
      pcrWindowStart_ = pcr;
      pcrWindowIndex_ = index_;
      for (uint16_t p : activePids_) pids_[p].pcrWindowStart = pids_[p].packets;
    } else {
      const int64_t span = PcrDelta(pcr, pcrWindowStart_);
      if (span >= kRateWindow) {
        const double secs = static_cast<double>(span) / kPcrHz;
        c_.pcrBitrate = static_cast<double>((index_ - pcrWindowIndex_) * kPacket * 8) / secs;
        for (uint16_t p : activePids_) {
          PidState& s = pids_[p];
          s.bitrate = static_cast<double>((s.packets - s.pcrWindowStart) * kPacket * 8) / secs;
          s.pcrWindowStart = s.packets;
        }
        pcrWindowStart_ = pcr;
        pcrWindowIndex_ = index_;
      }
    }
  }
  st.lastPcr = pcr;
  st.lastPcrIndex = index_;
  st.pcrValid = true;
  st.pcrCount++;
}

void Analyzer::Pes(PidState& st, const uint8_t* p, size_t len, double now) {
  constexpr size_t kPtsEnd = 14;
  if (len < kPtsEnd || p[0] != 0 || p[1] != 0 || p[2] != 1) return;
  if (!PesHasOptionalHeader(p[3]) || (p[6] & 0xC0) != 0x80) return;
  if (p[7] & 0x80) {
    st.hasPts = true;
    st.lastPtsMs = now;
  }
}

void Analyzer::Section(uint16_t pid, const uint8_t* s, size_t len, double now) {
  // Tables repeat unchanged many times a second: a byte-identical copy of the last good
  // section on this PID needs neither the CRC nor parsing again (memcmp is far cheaper).
  PidState& st = pids_[pid];
  const bool repeat = st.lastSection.size() == len && std::memcmp(st.lastSection.data(), s, len) == 0;
  if (!repeat) {
    if (SectionHasCrc(s, len) && (len < 4 || Crc32Mpeg(s, len) != 0)) {
      c_.crcErrors++;
      if (opts_.tr101290) tr_.crcError++;
      return;
    }
    st.lastSection.assign(s, s + len);
  }
  const uint8_t table = s[0];
  // PAT, CAT, PMT and SDT are long-form sections: syntax bit set, 8-byte header + CRC at least.
  // Anything shorter is malformed and never parsed (it would be read past its end).
  const bool longForm = len >= kMinLongSection && (s[1] & 0x80);
  if (pid == kPidPat) {
    if (table == kTablePat && longForm) {
      lastPatMs_ = now;
      if (!repeat) OnPat(s, len, now);
    } else if (opts_.tr101290) {
      tr_.patError++;
    }
  } else if (pid == kPidCat) {
    if (table == kTableCat && longForm) catSeen_ = true;
    else if (opts_.tr101290) tr_.catError++;
  } else if (pid == kPidSdt && table == kTableSdtActual && longForm && !repeat) {
    std::vector<ServiceInfo> svcs;
    if (ParseSdt(s, len, &svcs)) {
      for (auto& sv : svcs) services_[sv.serviceId] = std::move(sv);
    }
  }
  if (table == kTablePmt && longForm && pids_[pid].isPmt) OnPmt(pid, s, len, now);
  if (Queued(pid)) {
    if (queue_.size() >= kMaxQueuedSections) {
      c_.sectionsDropped++;
    } else {
      queue_.push_back(QueuedSection{pid, table, std::vector<uint8_t>(s, s + len)});
    }
  }
}

void Analyzer::OnPat(const uint8_t* s, size_t len, double now) {
  if (!(s[5] & 1)) return;  // current_next_indicator = 0: not in force yet
  uint8_t version = 0;
  std::vector<PatEntry> entries;
  if (!ParsePat(s, len, &version, &entries)) return;
  if (version == patVersion_ && s[6] == 0 && !pat_.empty()) return;  // a repeat
  if (version != patVersion_ || s[6] == 0) pat_.clear();
  patVersion_ = version;
  for (const PatEntry& e : entries) {
    if (e.pnr != 0) pat_[e.pnr] = e.pid;  // pnr 0 is the NIT PID
  }
  RebuildRoles(now);
}

void Analyzer::OnPmt(uint16_t pid, const uint8_t* s, size_t len, double now) {
  if (!(s[5] & 1)) return;
  const uint16_t pnr = static_cast<uint16_t>((s[3] << 8) | s[4]);
  auto it = programs_.find(pnr);
  if (it == programs_.end() || it->second.pmtPid != pid) return;  // not announced by the PAT
  pids_[pid].lastPmtMs = now;
  ProgramInfo& prog = it->second;
  if (prog.lastPmt.size() == len && std::memcmp(prog.lastPmt.data(), s, len) == 0) return;
  PmtInfo pmt;
  if (!ParsePmt(s, len, &pmt)) return;
  prog.pmt = std::move(pmt);
  prog.version = prog.pmt.version;
  prog.lastPmt.assign(s, s + len);
  RebuildRoles(now);
}

// Recompute which PIDs are PMTs and which are referenced elementary streams, from the PAT and
// the PMTs known now. A PID that becomes referenced starts its PID_error clock at `now`.
void Analyzer::RebuildRoles(double now) {
  std::vector<bool> pmt(kPidCount, false), es(kPidCount, false), av(kPidCount, false);
  std::map<uint16_t, ProgramInfo> next;
  for (const auto& [pnr, pmtPid] : pat_) {
    auto old = programs_.find(pnr);
    ProgramInfo prog;
    if (old != programs_.end() && old->second.pmtPid == pmtPid) prog = std::move(old->second);
    prog.pnr = pnr;
    prog.pmtPid = pmtPid;
    pmt[pmtPid] = true;
    for (const EsInfo& e : prog.pmt.streams) {
      es[e.pid] = true;
      if (IsAudioVideo(e)) av[e.pid] = true;
    }
    next[pnr] = std::move(prog);
  }
  programs_ = std::move(next);
  esPids_.clear();
  for (uint16_t p = 0; p < kPidCount; p++) {
    PidState& st = pids_[p];
    if (pmt[p] && !st.isPmt) st.lastPmtMs = now;
    if (st.isPmt && !pmt[p] && !queuePid_[p] && p > kPidTdt) {
      st.followSections = false;
      if (st.sections) st.sections->Reset();
    }
    if (pmt[p]) st.followSections = true;
    st.isPmt = pmt[p];
    if (es[p] && !st.isEs) {
      st.lastSeenMs = now;
      if (!st.hasPts) st.lastPtsMs = now;
    }
    st.isEs = es[p];
    st.ptsWatch = av[p];
    if (es[p]) esPids_.push_back(p);
  }
}

// Time-based indicators, evaluated on the caller's clock at most every kSweepEveryMs. Each one
// counts once per elapsed threshold while the condition lasts (absent for 2 s → 4 PAT_errors).
void Analyzer::Sweep(double now) {
  lastSweepMs_ = now;
  if (opts_.tr101290) SweepIndicators(now);
  if (now - arrivalWindowStartMs_ >= kArrivalWindowMs) {
    const double secs = (now - arrivalWindowStartMs_) / 1000;
    c_.arrivalBitrate = static_cast<double>(arrivalWindowBytes_ * 8) / secs;
    for (uint16_t p : activePids_) {
      PidState& st = pids_[p];
      if (pcrMaster_ < 0) {
        st.bitrate = static_cast<double>((st.packets - st.arrivalWindowStart) * kPacket * 8) / secs;
      }
      st.arrivalWindowStart = st.packets;
    }
    arrivalWindowStartMs_ = now;
    arrivalWindowBytes_ = 0;
  }
}

// The table and PID clocks run only while bytes arrive. A wait with nothing at all — an encoder
// warming up after its first PAT, PMT and frame, an input that went silent — is the input's
// state (no signal), not a PAT, PMT or PID missing from a flowing stream; counted, it left every
// fresh stream with P1 2 (one PAT_error, one PMT_error) for good.
void Analyzer::SkipSilence(double gapMs) {
  lastPatMs_ += gapMs;
  for (const auto& [pnr, prog] : programs_) pids_[prog.pmtPid].lastPmtMs += gapMs;
  for (uint16_t p : esPids_) {
    pids_[p].lastSeenMs += gapMs;
    pids_[p].lastPtsMs += gapMs;
  }
}

void Analyzer::SweepIndicators(double now) {
  if (now - lastPatMs_ > opts_.patTimeoutMs) {
    tr_.patError++;
    lastPatMs_ = now;
  }
  for (const auto& [pnr, prog] : programs_) {
    PidState& st = pids_[prog.pmtPid];
    if (now - st.lastPmtMs > opts_.patTimeoutMs) {
      tr_.pmtError++;
      st.lastPmtMs = now;
    }
  }
  for (uint16_t p : esPids_) {
    PidState& st = pids_[p];
    if (st.packets != st.sweepPackets) {  // seen since the last sweep (kept off the hot path)
      st.sweepPackets = st.packets;
      st.lastSeenMs = now;
    }
    if (now - st.lastSeenMs > opts_.pidTimeoutMs) {
      tr_.pidError++;
      st.lastSeenMs = now;
    }
    if (st.ptsWatch && st.scrambling == 0 && now - st.lastPtsMs > opts_.ptsTimeoutMs) {
      tr_.ptsError++;
      st.lastPtsMs = now;
    }
  }
  if (scrambledSinceSweep_ && !catSeen_ && now - lastCatErrMs_ >= kCatErrorEveryMs) {
    tr_.catError++;
    lastCatErrMs_ = now;
  }
  scrambledSinceSweep_ = false;
}

std::vector<QueuedSection> Analyzer::TakeSections() {
  std::vector<QueuedSection> out;
  out.swap(queue_);
  return out;
}

}  // namespace sluice::ts

// BISS descrambling over libdvbcsa's bitslice batches (see biss.h).
#include "ts/biss.h"

#include <algorithm>
#include <cstring>

#include "ts/crc32.h"

namespace sluice::ts {
namespace {

constexpr size_t kPacket = 188;
constexpr size_t kPids = 8192;
constexpr uint16_t kUnitStart = 0x8000;
/** dvbcsa_bs_decrypt's maxlen: the largest payload of a TS packet, a multiple of 8. */
constexpr unsigned kMaxPayload = 184;

/** Stream types whose packets carry sections, not PES (the 00 00 01 check does not apply). */
bool CarriesPes(uint8_t streamType) {
  switch (streamType) {
    case 0x05:  // private sections
    case 0x0A:  // DSM-CC multiprotocol encapsulation
    case 0x0B:  // DSM-CC U-N messages
    case 0x0C:  // DSM-CC stream descriptors
    case 0x0D:  // DSM-CC sections
    case 0x86:  // SCTE-35 splice information
      return false;
    default:
      return true;
  }
}

/** Offset of the payload of a packet (188 when it has none). */
size_t PayloadOffset(const uint8_t* p) {
  const uint8_t afc = (p[3] >> 4) & 3;
  if (!(afc & 1)) return kPacket;
  if (!(afc & 2)) return 4;
  const size_t off = 5 + static_cast<size_t>(p[4]);
  return off < kPacket ? off : kPacket;
}

/** A T2-MI carrier in a PMT (as src/mpegts/t2mi.ts reads it): stream_type 0x06 with an
 *  extension descriptor (0x7F) whose descriptor_tag_extension is 0x11 (T2MI_descriptor). */
constexpr uint8_t kT2miStreamType = 0x06;
constexpr uint8_t kExtensionDescriptor = 0x7F;
constexpr uint8_t kExtensionT2mi = 0x11;

/** The T2-MI carrier PIDs a PMT section (CRC checked) signals. */
std::vector<uint16_t> T2miCarriers(const uint8_t* s, size_t len) {
  std::vector<uint16_t> out;
  if (len < 16) return out;
  const size_t end = len - 4;  // before the CRC
  size_t i = 12 + (((s[10] & 0x0F) << 8) | s[11]);
  while (i + 5 <= end) {
    const uint8_t type = s[i];
    const uint16_t pid = static_cast<uint16_t>(((s[i + 1] & 0x1F) << 8) | s[i + 2]);
    const size_t infoEnd = i + 5 + (((s[i + 3] & 0x0F) << 8) | s[i + 4]);
    if (infoEnd > end) break;
    bool t2mi = false;
    for (size_t d = i + 5; d + 2 <= infoEnd;) {
      const size_t dl = s[d + 1];
      if (d + 2 + dl > infoEnd) break;
      if (s[d] == kExtensionDescriptor && dl >= 1 && s[d + 2] == kExtensionT2mi) t2mi = true;
      d += 2 + dl;
    }
    if (type == kT2miStreamType && t2mi && pid > 0x1F && pid != 0x1FFF) out.push_back(pid);
    i = infoEnd;
  }
  return out;
}

/** T2-MI packet_type values of ETSI TS 102 773 (table 2). */
bool KnownT2miType(uint8_t t) {
  switch (t) {
    case 0x00: case 0x01: case 0x02:              // BBFrame, auxiliary I/Q, cell insertion
    case 0x10: case 0x11: case 0x12:              // L1-current, L1-future, P2 bias balancing
    case 0x20: case 0x21:                         // timestamp, individual addressing
    case 0x30: case 0x31: case 0x32: case 0x33:   // FEF parts
      return true;
    default:
      return false;
  }
}

/** The check of a carrier's unit-start packet after descrambling (payload = pointer_field and
 *  on): 1 when a plausible T2-MI header starts where the pointer_field says (a known
 *  packet_type, the rfu bits around t2mi_stream_id zero), 0 when not or when the pointer_field
 *  points past the packet, -1 when the header runs past the packet (not judged). */
int T2miHeadCheck(const uint8_t* d, size_t len) {
  if (len < 1) return -1;
  const size_t at = 1 + static_cast<size_t>(d[0]);
  if (at >= len) return 0;
  if (at + 4 > len) return -1;
  const uint8_t* h = d + at;
  return KnownT2miType(h[0]) && (h[2] & 0x0F) == 0 && (h[3] & 0xF8) == 0 ? 1 : 0;
}

}  // namespace

unsigned BissDescrambler::BatchSize() { return dvbcsa_bs_batch_size(); }

BissDescrambler::BissDescrambler(const std::vector<BissTargetConfig>& targets)
    : targets_(targets.size()), pids_(kPids), es_(targets.size()) {
  batchSize_ = dvbcsa_bs_batch_size();
  slots_.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); i++) {
    Target& t = targets_[i];
    t.st.pnr = targets[i].pnr;
    size_t k = 0;
    while (k < slots_.size() && std::memcmp(slots_[k].cw, targets[i].cw, 8) != 0) k++;
    if (k == slots_.size()) {
      KeySlot& slot = slots_.emplace_back();
      std::memcpy(slot.cw, targets[i].cw, 8);
      slot.key = dvbcsa_bs_key_alloc();
      dvbcsa_bs_key_set(slot.cw, slot.key);
      slot.batch.assign(batchSize_ + 1, dvbcsa_bs_batch_s{nullptr, 0});
      slot.meta.assign(batchSize_, 0);
    }
    t.slot = k;
    if (t.st.pnr < 0) wantCarrier_ = true;
  }
  pids_[0].psi = true;
}

BissDescrambler::~BissDescrambler() {
  for (KeySlot& k : slots_) dvbcsa_bs_key_free(k.key);
}

void BissDescrambler::Process(uint8_t* data, size_t count) {
  for (size_t i = 0; i < count; i++) {
    uint8_t* p = data + i * kPacket;
    if (p[0] != 0x47) continue;
    stats_.packets++;
    const uint16_t pid = static_cast<uint16_t>(((p[1] & 0x1F) << 8) | p[2]);
    PidState& ps = pids_[pid];
    const uint8_t tsc = p[3] >> 6;
    if (tsc == 0) {
      if (ps.psi) OnPsi(pid, p);
      if (ps.target >= 0 && (p[3] & 0x10)) {
        targets_[ps.target].st.clear++;
        ps.scrambledOut = false;
      } else if (p[3] & 0x10) {
        ps.scrambledOut = false;
      }
      continue;
    }
    stats_.scrambled++;
    if (tsc == 1) {
      stats_.reserved++;
      ps.scrambledOut = true;
      continue;
    }
    if (ps.target < 0) {
      stats_.notTargeted++;
      ps.scrambledOut = true;
      continue;
    }
    KeySlot& k = slots_[targets_[ps.target].slot];
    p[3] &= 0x3F;  // clear: it leaves descrambled
    const size_t off = PayloadOffset(p);
    if (off >= kPacket) continue;  // no payload: nothing to descramble
    k.batch[k.n] = dvbcsa_bs_batch_s{p + off, static_cast<unsigned>(kPacket - off)};
    k.meta[k.n] = pid | ((p[1] & 0x40) ? kUnitStart : 0);
    if (++k.n == batchSize_) Flush(k);
  }
  for (KeySlot& k : slots_) {
    if (k.n) Flush(k);
  }
}

void BissDescrambler::Flush(KeySlot& k) {
  k.batch[k.n] = dvbcsa_bs_batch_s{nullptr, 0};
  dvbcsa_bs_decrypt(k.key, k.batch.data(), kMaxPayload);
  stats_.descrambled += k.n;
  for (size_t e = 0; e < k.n; e++) {
    PidState& ps = pids_[k.meta[e] & 0x1FFF];
    // The PID's target now: a PMT change earlier in this call may have moved the PID, then the
    // packet counts for its new target, or for none.
    BissTargetStats* st = ps.target >= 0 ? &targets_[ps.target].st : nullptr;
    if (st) st->descrambled++;
    if ((k.meta[e] & kUnitStart) && ps.pes && k.batch[e].len >= 3) {
      const uint8_t* d = k.batch[e].data;
      ps.bad = !(d[0] == 0 && d[1] == 0 && d[2] == 1);
      if (st) {
        st->checked = true;
        (ps.bad ? st->pesBad : st->pesOk)++;
      }
    } else if ((k.meta[e] & kUnitStart) && ps.carrier) {
      const int ok = T2miHeadCheck(k.batch[e].data, k.batch[e].len);
      if (ok >= 0) {
        ps.bad = ok == 0;
        if (st) {
          st->checked = true;
          (ps.bad ? st->pesBad : st->pesOk)++;
        }
      }
    }
    if (ps.bad && st) st->stillScrambled++;
    ps.scrambledOut = ps.bad;
  }
  k.n = 0;
}

void BissDescrambler::OnPsi(uint16_t pid, const uint8_t* p) {
  if (!(p[3] & 0x10)) return;
  PidState& ps = pids_[pid];
  const uint8_t cc = p[3] & 0x0F;
  SectionAssembler& a = asm_[pid];
  if (ps.cc != 0xFF && cc == ps.cc) return;  // a duplicate
  if (ps.cc != 0xFF && cc != ((ps.cc + 1) & 0x0F)) a.Reset();
  ps.cc = cc;
  const size_t off = PayloadOffset(p);
  if (off >= kPacket) return;
  a.Feed(p + off, kPacket - off, (p[1] & 0x40) != 0,
         [this, pid](const uint8_t* s, size_t len) { OnSection(pid, s, len); });
}

void BissDescrambler::OnSection(uint16_t pid, const uint8_t* s, size_t len) {
  if (len < 12 || Crc32Mpeg(s, len) != 0) {
    stats_.crcErrors++;
    return;
  }
  if (pid == 0 && s[0] == 0x00) {
    // PAT: the entries of every section of one version, complete once 0..last are in.
    const uint8_t version = (s[5] >> 1) & 0x1F;
    const uint8_t number = s[6], last = s[7];
    if (!(s[5] & 1)) return;  // not yet applicable
    if (version != patVersion_ || last != patLast_) {
      patSections_.assign(static_cast<size_t>(last) + 1, {});
      patHave_.assign(static_cast<size_t>(last) + 1, false);
      patVersion_ = version;
      patLast_ = last;
    }
    if (number > last) return;
    std::vector<PatEntry> entries;
    uint8_t v = 0;
    if (!ParsePat(s, len, &v, &entries)) return;
    patSections_[number] = std::move(entries);
    patHave_[number] = true;
    if (!std::all_of(patHave_.begin(), patHave_.end(), [](bool b) { return b; })) return;
    std::vector<PatEntry> all;
    for (const auto& sec : patSections_) all.insert(all.end(), sec.begin(), sec.end());
    if (patSeen_ && all.size() == pat_.size() &&
        std::equal(all.begin(), all.end(), pat_.begin(), [](const PatEntry& a, const PatEntry& b) {
          return a.pnr == b.pnr && a.pid == b.pid;
        })) {
      return;
    }
    pat_ = std::move(all);
    patSeen_ = true;
    stats_.patSeen = true;
    Remap();
    return;
  }
  if (s[0] != 0x02) return;
  PmtInfo pmt;
  if (!ParsePmt(s, len, &pmt)) return;
  if (wantCarrier_ && (s[5] & 1)) {
    auto pmtIt = carriers_.find(pid);
    if (pmtIt != carriers_.end()) {
      std::vector<uint16_t> found = T2miCarriers(s, len);
      auto it = pmtIt->second.find(pmt.pnr);
      if (it == pmtIt->second.end() || it->second != found) {
        pmtIt->second[pmt.pnr] = std::move(found);
        Remap();
      }
    }
  }
  for (size_t i = 0; i < targets_.size(); i++) {
    if (targets_[i].st.pnr != pmt.pnr || targets_[i].st.pmtPid != pid) continue;
    std::vector<std::pair<uint16_t, bool>> es;
    for (const EsInfo& e : pmt.streams) {
      if (e.pid < 0x20 || e.pid >= 0x1FFF || e.pid == pid) continue;  // never a table PID
      es.emplace_back(e.pid, CarriesPes(e.streamType));
    }
    if (es != es_[i]) {
      es_[i] = std::move(es);
      Remap();
    }
  }
}

/** The carrier from the PMTs read, as the T2-MI reader picks it: the lowest PID any PMT of the
 *  PAT signals. Absent once every PMT of the (complete) PAT was read without one. */
void BissDescrambler::ChooseCarrier() {
  carrier_ = -1;
  carrierPmt_ = -1;
  bool allRead = patSeen_;
  for (const PatEntry& e : pat_) {
    if (e.pnr == 0 || e.pid < 0x20 || e.pid >= 0x1FFF) continue;
    auto it = carriers_.find(e.pid);
    if (it == carriers_.end() || it->second.empty()) {
      allRead = false;
      continue;
    }
    for (const auto& [pnr, list] : it->second) {
      for (uint16_t c : list) {
        if (carrier_ < 0 || c < carrier_) {
          carrier_ = c;
          carrierPmt_ = e.pid;
        }
      }
    }
  }
  carrierAbsent_ = allRead && carrier_ < 0;
}

/** Rebuilds the PID roles from the PAT and the targets' PMTs. */
void BissDescrambler::Remap() {
  for (PidState& ps : pids_) {
    ps.target = -1;
    ps.pes = false;
    ps.carrier = false;
    ps.psi = false;
  }
  pids_[0].psi = true;
  if (wantCarrier_) {
    // Every PMT of the PAT is read for the carrier; PMT PIDs gone from it are forgotten.
    std::unordered_map<uint16_t, std::unordered_map<uint16_t, std::vector<uint16_t>>> kept;
    for (const PatEntry& e : pat_) {
      if (e.pnr == 0 || e.pid < 0x20 || e.pid >= 0x1FFF) continue;
      auto it = carriers_.find(e.pid);
      if (it != carriers_.end()) {
        kept[e.pid] = std::move(it->second);
        carriers_.erase(it);
      } else {
        kept[e.pid];
      }
      pids_[e.pid].psi = true;
    }
    for (const auto& [pid, m] : carriers_) asm_.erase(pid);
    carriers_ = std::move(kept);
    ChooseCarrier();
  }
  // Carrier targets first: the carrier PID is theirs even when a programme target's PMT lists
  // it too (that programme goes without it). Every PLP shares the one carrier: the first
  // carrier target takes it, a later one is left without PIDs.
  for (size_t i = 0; i < targets_.size(); i++) {
    BissTargetStats& st = targets_[i].st;
    if (st.pnr >= 0) continue;
    st.inPat = carrier_ >= 0;
    st.absent = carrierAbsent_;
    st.pmtPid = carrierPmt_;
    st.pids.clear();
    if (carrier_ < 0) continue;
    PidState& ps = pids_[carrier_];
    if (ps.carrier) continue;  // an earlier carrier target has it (one carrier, one key)
    ps.target = static_cast<int16_t>(i);
    ps.pes = false;
    ps.carrier = true;
    st.pids.push_back(static_cast<uint16_t>(carrier_));
  }
  for (size_t i = 0; i < targets_.size(); i++) {
    BissTargetStats& st = targets_[i].st;
    if (st.pnr < 0) continue;
    int pmtPid = -1;
    for (const PatEntry& e : pat_) {
      if (e.pnr == st.pnr && e.pnr != 0 && e.pid >= 0x20 && e.pid < 0x1FFF) pmtPid = e.pid;
    }
    st.inPat = pmtPid >= 0;
    if (pmtPid != st.pmtPid) {
      // A new PMT PID: its streams are read again from there.
      es_[i].clear();
      if (st.pmtPid >= 0) asm_.erase(static_cast<uint16_t>(st.pmtPid));
      st.pmtPid = pmtPid;
    }
    if (pmtPid >= 0) pids_[pmtPid].psi = true;
    st.pids.clear();
    for (const auto& [pid, pes] : es_[i]) {
      if (pids_[pid].carrier) continue;
      pids_[pid].target = static_cast<int16_t>(i);
      pids_[pid].pes = pes;
      st.pids.push_back(pid);
    }
  }
}

std::vector<BissTargetStats> BissDescrambler::TargetStats() const {
  std::vector<BissTargetStats> out;
  for (const Target& t : targets_) {
    BissTargetStats st = t.st;
    st.lastBad = false;
    for (uint16_t pid : st.pids) st.lastBad = st.lastBad || pids_[pid].bad;
    out.push_back(std::move(st));
  }
  return out;
}

std::vector<uint16_t> BissDescrambler::StillScrambledPids() const {
  std::vector<uint16_t> out;
  for (size_t pid = 0; pid < kPids; pid++) {
    if (pids_[pid].scrambledOut) out.push_back(static_cast<uint16_t>(pid));
  }
  return out;
}

size_t BissScramble(uint8_t* data, size_t count, const uint8_t cw[8], const std::vector<bool>& pids,
                    uint8_t tsc) {
  dvbcsa_key_s* key = dvbcsa_key_alloc();
  dvbcsa_key_set(cw, key);
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    uint8_t* p = data + i * kPacket;
    if (p[0] != 0x47) continue;
    const uint16_t pid = static_cast<uint16_t>(((p[1] & 0x1F) << 8) | p[2]);
    if (!pids[pid] || (p[3] >> 6) != 0) continue;
    const size_t off = PayloadOffset(p);
    if (off >= kPacket) continue;
    dvbcsa_encrypt(key, p + off, static_cast<unsigned>(kPacket - off));
    p[3] = static_cast<uint8_t>((p[3] & 0x3F) | (tsc << 6));
    n++;
  }
  dvbcsa_key_free(key);
  return n;
}

}  // namespace sluice::ts

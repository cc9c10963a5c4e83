// BISS descrambling (EBU Tech 3292, mode 1 and the 16-digit form): DVB-CSA with one fixed
// control word per programme, the same for even and odd packets, over libdvbcsa's bitslice
// batch API. The descrambler follows the PAT and the targets' PMTs itself, so it finds each
// programme's elementary PIDs without help; a caller feeds it aligned 188-byte packets and it
// descrambles their payloads in place. A target may also be the T2-MI carrier of the multiplex
// (pnr -(n+1), spec 1's form for PLP n): it takes the carrier PID found as the T2-MI reader
// finds it (src/mpegts/t2mi.ts: the lowest PID of stream_type 0x06 with a T2MI_descriptor
// across every PMT of the PAT). No N-API here (biss_wrap.{h,cc} is the class over it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <dvbcsa/dvbcsa.h>

#include "ts/sections.h"

namespace sluice::ts {

/** One descrambling target: a programme number (1..65535) or a T2-MI carrier (-(n+1) for
 *  PLP n; every PLP of a carrier shares it) and its 8-byte control word. */
struct BissTargetConfig {
  int32_t pnr = 0;
  uint8_t cw[8] = {};
};

/** What one target saw (counters since the descrambler was made). */
struct BissTargetStats {
  int32_t pnr = 0;
  /** PMT PID from the PAT; -1 while unknown. A carrier: the PMT PID that signals it. */
  int pmtPid = -1;
  /** The programme is in the last PAT (false also before the first PAT). A carrier: found. */
  bool inPat = false;
  /** A carrier target: every PMT of a complete PAT was read and none signals a carrier. */
  bool absent = false;
  std::vector<uint16_t> pids;
  uint64_t descrambled = 0;
  /** PES starts (unit-start packets of a PES PID) checked after descrambling: 00 00 01 or not.
   *  A carrier: T2-MI packet headers where the pointer_field says one starts (see IsT2miHead). */
  uint64_t pesOk = 0;
  uint64_t pesBad = 0;
  /** Packets descrambled into no PES start (a wrong key), the one that failed and the rest
   *  of its PES packet. */
  uint64_t stillScrambled = 0;
  /** Payload packets left clear (transport_scrambling_control 00) on the target's PIDs. */
  uint64_t clear = 0;
  /** A PID of the target whose last checked PES start was bad. */
  bool lastBad = false;
  /** A PES start was checked at all. */
  bool checked = false;
};

struct BissStats {
  uint64_t packets = 0;
  uint64_t scrambled = 0;     // packets in with transport_scrambling_control 10 or 11
  uint64_t descrambled = 0;   // of them, descrambled (a target's PID)
  uint64_t notTargeted = 0;   // scrambled packets of no target's PID (passed as they came)
  uint64_t reserved = 0;      // transport_scrambling_control 01 (reserved): passed as is
  uint64_t crcErrors = 0;     // PAT/PMT sections dropped for a bad CRC
  bool patSeen = false;       // a complete PAT was read
};

class BissDescrambler {
 public:
  explicit BissDescrambler(const std::vector<BissTargetConfig>& targets);
  ~BissDescrambler();
  BissDescrambler(const BissDescrambler&) = delete;
  BissDescrambler& operator=(const BissDescrambler&) = delete;

  /** Descrambles in place the target packets among `count` aligned packets at `data`. */
  void Process(uint8_t* data, size_t count);

  const BissStats& stats() const { return stats_; }
  std::vector<BissTargetStats> TargetStats() const;
  /** PIDs whose packets leave still scrambled: scrambled PIDs of no target, and target PIDs
   *  whose last PES start did not descramble (a wrong key). */
  std::vector<uint16_t> StillScrambledPids() const;

  /** The number of packets libdvbcsa's bitslice code takes per call. */
  static unsigned BatchSize();

 private:
  /** One control word and its batch: targets with the same key share it, so their packets
   *  fill one bitslice batch (whose cost is the same however few packets it holds). */
  struct KeySlot {
    uint8_t cw[8] = {};
    dvbcsa_bs_key_s* key = nullptr;
    std::vector<dvbcsa_bs_batch_s> batch;  // n entries + the NULL terminator
    std::vector<uint16_t> meta;            // per entry: pid | 0x8000 when unit start
    size_t n = 0;
  };
  struct Target {
    BissTargetStats st;
    size_t slot = 0;
  };
  struct PidState {
    int16_t target = -1;   // index into targets_ of the ES PID, -1 none
    bool pes = false;      // the PMT's stream type carries PES (the 00 00 01 check applies)
    bool carrier = false;  // a carrier target's PID (the T2-MI header check applies)
    bool psi = false;      // PAT or a target's PMT PID
    bool bad = false;      // the last PES start on it did not descramble
    bool scrambledOut = false;  // the last payload packet left scrambled
    uint8_t cc = 0xFF;     // last continuity counter of a PSI PID (section reassembly)
  };

  void Flush(KeySlot& k);
  void OnPsi(uint16_t pid, const uint8_t* pkt);
  void OnSection(uint16_t pid, const uint8_t* s, size_t len);
  void Remap();

  std::vector<Target> targets_;
  std::vector<KeySlot> slots_;
  std::vector<PidState> pids_;
  std::unordered_map<uint16_t, SectionAssembler> asm_;
  std::vector<PatEntry> pat_;
  bool patSeen_ = false;
  /** The PAT being collected: its version, last_section_number, sections in and their entries. */
  uint8_t patVersion_ = 0xFF, patLast_ = 0;
  std::vector<bool> patHave_;
  std::vector<std::vector<PatEntry>> patSections_;
  /** Per target: its PMT's streams (pid, carries PES). */
  std::vector<std::vector<std::pair<uint16_t, bool>>> es_;
  /** With a carrier target: PMT PID → programme → the T2-MI carriers its PMT signals (every
   *  PMT of the PAT is read), and the carrier chosen from them (-1 none) with its PMT PID. */
  bool wantCarrier_ = false;
  std::unordered_map<uint16_t, std::unordered_map<uint16_t, std::vector<uint16_t>>> carriers_;
  int carrier_ = -1, carrierPmt_ = -1;
  bool carrierAbsent_ = false;
  void ChooseCarrier();
  BissStats stats_;
  unsigned batchSize_ = 0;
};

/** Scrambles in place, with dvbcsa_encrypt, the payload of every packet of `pids` (a 8192-entry
 *  mask) and sets its transport_scrambling_control to `tsc` (2 even, 3 odd): the test and
 *  bench fixtures' encoder. Returns the packets scrambled. */
size_t BissScramble(uint8_t* data, size_t count, const uint8_t cw[8], const std::vector<bool>& pids,
                    uint8_t tsc);

}  // namespace sluice::ts

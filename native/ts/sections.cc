// Section reassembly and PAT / PMT / SDT parsing (ISO/IEC 13818-1 2.4.4, EN 300 468 5.2.3).
#include "ts/sections.h"

namespace sluice::ts {
namespace {

constexpr uint8_t kStuffing = 0xFF;
constexpr size_t kHeader = 3;
constexpr size_t kCrcSize = 4;
constexpr uint8_t kTableTot = 0x73;
constexpr uint8_t kDescLanguage = 0x0A;
constexpr uint8_t kDescRegistration = 0x05;
constexpr uint8_t kDescService = 0x48;

size_t SectionTotal(const uint8_t* p) { return kHeader + (((p[1] & 0x0F) << 8) | p[2]); }

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void SectionAssembler::Feed(const uint8_t* p, size_t len, bool unitStart, const Sink& sink) {
  if (!unitStart) {
    if (!active_) return;
    size_t room = kMaxSectionLength - buf_.size();
    buf_.insert(buf_.end(), p, p + (len < room ? len : room));
    Complete(sink);  // what follows a section end in a non-start packet is stuffing
    return;
  }
  if (len < 1) return;
  size_t pointer = p[0];
  if (1 + pointer > len) {  // pointer past the payload: nothing here is trustworthy
    Reset();
    return;
  }
  if (active_) {
    buf_.insert(buf_.end(), p + 1, p + 1 + pointer);
    if (!Complete(sink)) Reset();  // the new section starts: the old one can no longer finish
  }
  StartSections(p, 1 + pointer, len, sink);
}

bool SectionAssembler::Complete(const Sink& sink) {
  if (need_ == 0 && buf_.size() >= kHeader) {
    need_ = SectionTotal(buf_.data());
    if (need_ > kMaxSectionLength) {
      Reset();
      return false;
    }
  }
  if (need_ == 0 || buf_.size() < need_) return false;
  sink(buf_.data(), need_);
  Reset();
  return true;
}

void SectionAssembler::StartSections(const uint8_t* p, size_t pos, size_t len, const Sink& sink) {
  while (pos < len && p[pos] != kStuffing) {
    if (len - pos < kHeader) {
      buf_.assign(p + pos, p + len);
      need_ = 0;
      active_ = true;
      return;
    }
    size_t total = SectionTotal(p + pos);
    if (total > kMaxSectionLength) return;
    if (pos + total <= len) {
      sink(p + pos, total);
      pos += total;
      continue;
    }
    buf_.assign(p + pos, p + len);
    need_ = total;
    active_ = true;
    return;
  }
}

bool SectionHasCrc(const uint8_t* s, size_t len) {
  if (len < kHeader) return false;
  return (s[1] & 0x80) != 0 || s[0] == kTableTot;
}

bool ParsePat(const uint8_t* s, size_t len, uint8_t* version, std::vector<PatEntry>* out) {
  constexpr size_t kFirst = 8;
  if (len < kFirst + kCrcSize) return false;
  *version = (s[5] >> 1) & 0x1F;
  for (size_t i = kFirst; i + 4 <= len - kCrcSize; i += 4) {
    PatEntry e;
    e.pnr = static_cast<uint16_t>((s[i] << 8) | s[i + 1]);
    e.pid = static_cast<uint16_t>(((s[i + 2] & 0x1F) << 8) | s[i + 3]);
    out->push_back(e);
  }
  return true;
}

bool ParsePmt(const uint8_t* s, size_t len, PmtInfo* out) {
  constexpr size_t kFixed = 12;
  if (len < kFixed + kCrcSize) return false;
  const size_t end = len - kCrcSize;
  out->pnr = static_cast<uint16_t>((s[3] << 8) | s[4]);
  out->version = (s[5] >> 1) & 0x1F;
  out->pcrPid = static_cast<uint16_t>(((s[8] & 0x1F) << 8) | s[9]);
  size_t pos = kFixed + (((s[10] & 0x0F) << 8) | s[11]);
  while (pos + 5 <= end) {
    EsInfo es;
    es.streamType = s[pos];
    es.pid = static_cast<uint16_t>(((s[pos + 1] & 0x1F) << 8) | s[pos + 2]);
    size_t infoLen = ((s[pos + 3] & 0x0F) << 8) | s[pos + 4];
    pos += 5;
    if (pos + infoLen > end) return false;
    size_t d = pos;
    while (d + 2 <= pos + infoLen) {
      uint8_t tag = s[d];
      size_t dlen = s[d + 1];
      if (d + 2 + dlen > pos + infoLen) break;
      es.descriptors.push_back(tag);
      const char* body = reinterpret_cast<const char*>(s + d + 2);
      if (tag == kDescLanguage && dlen >= 3 && es.language.empty()) es.language.assign(body, 3);
      if (tag == kDescRegistration && dlen >= 4) es.registration.assign(body, 4);
      d += 2 + dlen;
    }
    pos += infoLen;
    out->streams.push_back(std::move(es));
  }
  return true;
}

bool ParseSdt(const uint8_t* s, size_t len, std::vector<ServiceInfo>* out) {
  constexpr size_t kFirst = 11;
  if (len < kFirst + kCrcSize) return false;
  const size_t end = len - kCrcSize;
  size_t pos = kFirst;
  while (pos + 5 <= end) {
    ServiceInfo svc;
    svc.serviceId = static_cast<uint16_t>((s[pos] << 8) | s[pos + 1]);
    size_t loop = ((s[pos + 3] & 0x0F) << 8) | s[pos + 4];
    pos += 5;
    if (pos + loop > end) return false;
    size_t d = pos;
    while (d + 2 <= pos + loop) {
      uint8_t tag = s[d];
      size_t dlen = s[d + 1];
      if (d + 2 + dlen > pos + loop) break;
      if (tag == kDescService && dlen >= 3) {
        const uint8_t* b = s + d + 2;
        size_t provLen = b[1];
        if (2 + provLen < dlen) {
          size_t nameLen = b[2 + provLen];
          if (3 + provLen + nameLen <= dlen) {
            svc.serviceType = b[0];
            svc.provider = DvbText(b + 2, provLen);
            svc.name = DvbText(b + 3 + provLen, nameLen);
          }
        }
      }
      d += 2 + dlen;
    }
    pos += loop;
    out->push_back(std::move(svc));
  }
  return true;
}

std::string DvbText(const uint8_t* p, size_t len) {
  std::string out;
  if (len == 0) return out;
  size_t i = 0;
  uint8_t sel = p[0];
  if (sel < 0x20) i = sel == 0x10 ? 3 : 1;
  if (sel == 0x15) {
    for (; i < len; i++) out.push_back(static_cast<char>(p[i]));
    return out;
  }
  if (sel == 0x11) {
    for (; i + 1 < len; i += 2) {
      uint32_t cp = (p[i] << 8) | p[i + 1];
      if (cp >= 0xE080 && cp <= 0xE09F) continue;  // control codes in the private area
      AppendUtf8(&out, cp);
    }
    return out;
  }
  for (; i < len; i++) {
    uint8_t c = p[i];
    if (c >= 0x80 && c <= 0x9F) continue;  // emphasis / line-break control codes
    AppendUtf8(&out, c);
  }
  return out;
}

}  // namespace sluice::ts

// RistSender: librist sender set-up (profile, the peer to call, recovery, encryption), payload
// cutting and statistics (see rist_sender.h).
#include "transport/rist_sender.h"

#include <librist/librist.h>

#include <algorithm>
#include <cstring>

#include "transport/rist_log.h"
#include "util/errors.h"
#include "util/options.h"

namespace sluice {

namespace {

/** 7 TS packets: the usual RTP payload of a transport stream. */
constexpr size_t kPayload = 7 * 188;

int OnStats(void* arg, const struct rist_stats* s) {
  auto* st = static_cast<RistSendState*>(arg);
  if (s->stats_type == RIST_STATS_SENDER_PEER) {
    const rist_stats_sender_peer& p = s->stats.sender_peer;
    std::lock_guard<std::mutex> lock(st->mu);
    RistSendState::PeerFigures& f = st->peers[p.peer_id];
    f.bandwidth = static_cast<double>(p.bandwidth);
    f.retryBandwidth = static_cast<double>(p.retry_bandwidth);
    f.quality = p.quality;
    f.rtt = p.rtt;
    // per-interval counters (as the receiver's): summed over intervals and peers
    st->sent += p.sent;
    st->received += p.received;
    st->retransmitted += p.retransmitted;
  }
  rist_stats_free(s);
  return 0;
}

void OnStatus(void* arg, struct rist_peer* peer, enum rist_connection_status status) {
  auto* st = static_cast<RistSendState*>(arg);
  std::lock_guard<std::mutex> lock(st->mu);
  if (status == RIST_CONNECTION_ESTABLISHED || status == RIST_CLIENT_CONNECTED) {
    st->up.insert(peer);
  } else {
    st->up.erase(peer);
    st->timeouts++;
  }
}

}  // namespace

Napi::Function RistSenderWrap::Define(Napi::Env env) {
  return DefineClass(env, "RistSender",
                     {
                         InstanceMethod("write", &RistSenderWrap::Write),
                         InstanceMethod("stats", &RistSenderWrap::Stats),
                         InstanceMethod("close", &RistSenderWrap::Close),
                     });
}

RistSenderWrap::RistSenderWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<RistSenderWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "RistSender(options)");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  const int profileN = IntOf(o, "profile", 1);
  std::string secret = StrOf(o, "secret");
  if (secret.size() >= RIST_MAX_STRING_SHORT) secret.resize(RIST_MAX_STRING_SHORT - 1);
  st_ = std::make_shared<RistSendState>();
  auto fail = [&](const std::string& what) {
    if (ctx_) rist_destroy(ctx_);
    ctx_ = nullptr;
    if (log_) rist_logging_settings_free2(&log_);
    throw CodedError(env, "ERR_RIST", what);
  };
  EnsureRistGlobalLog();  // before the first rist_logging_set (see rist_log.h)
  if (rist_logging_set(&log_, static_cast<rist_log_level>(IntOf(o, "logLevel", RIST_LOG_WARN)),
                       KeepRistLog<RistSendState>, st_.get(), nullptr, nullptr) != 0) {
    fail("rist_logging_set failed");
  }
  const rist_profile profile = profileN == 0 ? RIST_PROFILE_SIMPLE : RIST_PROFILE_MAIN;
  if (rist_sender_create(&ctx_, profile, 0, log_) != 0) fail("rist_sender_create failed");
  rist_connection_status_callback_set(ctx_, OnStatus, st_.get());
  rist_stats_callback_set(ctx_, IntOf(o, "statsIntervalMs", 1000), OnStats, st_.get());
  // Peers: `urls` with their `weights` (same length; the façade checked both).
  Napi::Array urls = o.Get("urls").As<Napi::Array>();
  Napi::Array weights = o.Get("weights").As<Napi::Array>();
  const uint32_t buffer = static_cast<uint32_t>(IntOf(o, "bufferMs", 1000));
  for (uint32_t i = 0; i < urls.Length(); i++) {
    const std::string url = urls.Get(i).As<Napi::String>().Utf8Value();
    rist_peer_config* cfg = nullptr;
    if (rist_parse_address2(url.c_str(), &cfg) != 0 || !cfg) fail("cannot parse address " + url);
    cfg->recovery_mode = RIST_RECOVERY_MODE_TIME;
    cfg->recovery_length_min = buffer;
    cfg->recovery_length_max = buffer;
    cfg->recovery_rtt_min = static_cast<uint32_t>(IntOf(o, "rttMinMs", 50));
    cfg->recovery_rtt_max = static_cast<uint32_t>(IntOf(o, "rttMaxMs", 500));
    cfg->weight = weights.Get(i).As<Napi::Number>().Uint32Value();
    if (!secret.empty() && profile != RIST_PROFILE_SIMPLE) {
      std::strncpy(cfg->secret, secret.c_str(), sizeof cfg->secret - 1);
      cfg->secret[sizeof cfg->secret - 1] = '\0';
      cfg->key_size = IntOf(o, "keySize", 128);
    }
    rist_peer* peer = nullptr;
    const int rc = rist_peer_create(ctx_, &peer, cfg);
    rist_peer_config_free2(&cfg);
    if (rc != 0) {
      std::string why;
      {
        std::lock_guard<std::mutex> lock(st_->mu);
        why = st_->lastLog;
      }
      fail("cannot open peer " + url + (why.empty() ? "" : ": " + why));
    }
    peerCount_++;
  }
  if (rist_start(ctx_) != 0) fail("rist_start failed");
  open_ = true;
}

RistSenderWrap::~RistSenderWrap() { Shutdown(); }

void RistSenderWrap::Send(const uint8_t* p, size_t n) {
  rist_data_block block{};
  block.payload = p;
  block.payload_len = n;
  if (rist_sender_data_write(ctx_, &block) < 0) {
    writeErrors_++;
    return;
  }
  blocks_++;
  bytes_ += n;
}

Napi::Value RistSenderWrap::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open_) throw CodedError(env, "ERR_NATIVE_CLOSED", "sender is closed");
  if (info.Length() < 1 || !info[0].IsBuffer()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "write(buffer)");
  }
  Napi::Buffer<uint8_t> b = info[0].As<Napi::Buffer<uint8_t>>();
  const uint8_t* p = b.Data();
  size_t n = b.Length();
  if (!tail_.empty()) {  // complete the payload the previous write left
    const size_t take = std::min(n, kPayload - tail_.size());
    tail_.insert(tail_.end(), p, p + take);
    p += take;
    n -= take;
    if (tail_.size() < kPayload) return env.Undefined();
    Send(tail_.data(), tail_.size());
    tail_.clear();
  }
  for (; n >= kPayload; p += kPayload, n -= kPayload) Send(p, kPayload);
  tail_.assign(p, p + n);
  return env.Undefined();
}

Napi::Value RistSenderWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  RistSendState& s = *st_;
  auto n = [&](const char* k, double v) { o.Set(k, Napi::Number::New(env, v)); };
  n("blocks", static_cast<double>(blocks_));
  n("bytes", static_cast<double>(bytes_));
  n("writeErrors", static_cast<double>(writeErrors_));
  n("peers", peerCount_);
  n("timeouts", static_cast<double>(s.timeouts.load()));
  std::lock_guard<std::mutex> lock(s.mu);
  n("connected", static_cast<double>(s.up.size()));
  // Over the peers: the slowest RTT, the worst quality, the bandwidths summed.
  double bandwidth = 0, retry = 0, quality = 100;
  uint32_t rtt = 0;
  for (const auto& [id, f] : s.peers) {
    bandwidth += f.bandwidth;
    retry += f.retryBandwidth;
    quality = std::min(quality, f.quality);
    rtt = std::max(rtt, f.rtt);
  }
  n("bandwidth", bandwidth);
  n("retryBandwidth", retry);
  n("quality", quality);
  n("rtt", rtt);
  n("sent", static_cast<double>(s.sent));
  n("received", static_cast<double>(s.received));
  n("retransmitted", static_cast<double>(s.retransmitted));
  n("errors", static_cast<double>(s.errors));
  o.Set("lastLog", Napi::String::New(env, s.lastLog));
  return o;
}

Napi::Value RistSenderWrap::Close(const Napi::CallbackInfo& info) {
  Shutdown();
  return info.Env().Undefined();
}

void RistSenderWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  if (ctx_) rist_destroy(ctx_);  // joins librist's threads: no callback runs after this
  ctx_ = nullptr;
  if (log_) rist_logging_settings_free2(&log_);
}

}  // namespace sluice

// RistReceiver: librist context set-up (profile, listening peers, recovery, encryption,
// allow-conn-ip through the auth handler), the reader thread that batches librist's data blocks,
// and the hand-off of batches to JS in bounded slices (see rist_receiver.h).
#include "transport/rist_receiver.h"

#include <arpa/inet.h>
#include <librist/librist.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <optional>

#include "transport/rist_log.h"
#include "util/drain.h"
#include "util/errors.h"
#include "util/options.h"
#include "util/thread_name.h"

namespace sluice {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kTypicalBlock = 1316;

int OnStats(void* arg, const struct rist_stats* s) {
  auto* st = static_cast<RistState*>(arg);
  if (s->stats_type == RIST_STATS_RECEIVER_FLOW) {
    const rist_stats_receiver_flow& f = s->stats.receiver_flow;
    std::lock_guard<std::mutex> lock(st->mu);
    // librist reports the counters of the interval since the previous report: summed here.
    st->haveFlow = true;
    st->statsReports++;
    st->bandwidth = static_cast<double>(f.bandwidth);
    st->retryBandwidth = static_cast<double>(f.retry_bandwidth);
    st->quality = f.quality;
    st->rtt = f.rtt;
    st->lastReceived = f.received;
    st->lastLost = f.lost;
    st->lastMissing = f.missing;
    st->lastRecovered = f.recovered;
    st->received += f.received;
    st->missing += f.missing;
    st->reordered += f.reordered;
    st->recovered += f.recovered;
    st->recoveredOneRetry += f.recovered_one_retry;
    st->lost += f.lost;
  }
  rist_stats_free(s);
  return 0;
}

int OnConnect(void* arg, const char* connIp, uint16_t, const char*, uint16_t, struct rist_peer*) {
  auto* st = static_cast<RistState*>(arg);
  if (!st->allowIp.empty() && (!connIp || st->allowIp != connIp)) {
    st->rejected++;
    std::lock_guard<std::mutex> lock(st->mu);
    st->lastRejectedIp = connIp ? connIp : "";
    return -1;
  }
  st->connects++;
  return 0;
}

int OnDisconnect(void*, struct rist_peer*) { return 0; }

void OnStatus(void* arg, struct rist_peer*, enum rist_connection_status status) {
  auto* st = static_cast<RistState*>(arg);
  switch (status) {
    case RIST_CONNECTION_ESTABLISHED:
    case RIST_CLIENT_CONNECTED:
      st->peersConnected++;
      break;
    case RIST_CONNECTION_TIMED_OUT:
    case RIST_CLIENT_TIMED_OUT:
      st->timeouts++;
      if (st->peersConnected > 0) st->peersConnected--;
      break;
  }
}

/** librist binds its listening sockets with SO_REUSEADDR, so a second receiver on a port in use
 *  would bind too and silently take part of the traffic. A plain bind (no SO_REUSEADDR) of the
 *  same address and port fails while any socket holds it: the port is refused up front. */
int ProbeFree(const std::string& host, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  const int err = rc < 0 ? errno : 0;
  ::close(fd);
  return err;
}

}  // namespace

void RistState::Signal() {
  if (!tsfnOpen || pending.exchange(true)) return;  // a drain is already on its way
  std::shared_ptr<RistState> self = shared_from_this();  // alive until the call has run
  auto call = [self](Napi::Env env, Napi::Function) {
    if (env != nullptr && self->wrap) self->wrap->Pump(env);
    else self->pending = false;
  };
  if (tsfn.NonBlockingCall(call) != napi_ok) pending = false;
}

Napi::Function RistReceiverWrap::Define(Napi::Env env) {
  return DefineClass(env, "RistReceiver",
                     {
                         InstanceMethod("stats", &RistReceiverWrap::Stats),
                         InstanceMethod("close", &RistReceiverWrap::Close),
                         InstanceMethod("drain", &RistReceiverWrap::Drain),
                     });
}

RistReceiverWrap::RistReceiverWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<RistReceiverWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "RistReceiver(options, onData)");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  opts_.profile = IntOf(o, "profile", 1);
  opts_.allowIp = StrOf(o, "allowIp");
  opts_.sessionTimeoutMs = static_cast<uint32_t>(IntOf(o, "sessionTimeoutMs", 2000));
  opts_.rttMinMs = static_cast<uint32_t>(IntOf(o, "rttMinMs", 50));
  opts_.rttMaxMs = static_cast<uint32_t>(IntOf(o, "rttMaxMs", 500));
  opts_.bufferMs = static_cast<uint32_t>(IntOf(o, "bufferMs", 1000));
  opts_.secret = StrOf(o, "secret");
  if (opts_.secret.size() >= RIST_MAX_STRING_SHORT) opts_.secret.resize(RIST_MAX_STRING_SHORT - 1);
  opts_.keySize = IntOf(o, "keySize", 128);
  opts_.logLevel = IntOf(o, "logLevel", RIST_LOG_WARN);
  opts_.batchBlocks = IntOf(o, "batchBlocks", 64);
  opts_.batchLatencyMs = IntOf(o, "batchLatencyMs", 20);
  opts_.queueBatches = IntOf(o, "queueBatches", 256);
  opts_.statsIntervalMs = IntOf(o, "statsIntervalMs", 1000);
  Napi::Value peers = o.Get("peers");
  if (!peers.IsArray() || peers.As<Napi::Array>().Length() == 0) {
    throw CodedError(env, "ERR_NATIVE_ARG", "peers must be a non-empty array");
  }
  Napi::Array pa = peers.As<Napi::Array>();
  for (uint32_t i = 0; i < pa.Length(); i++) {
    Napi::Object p = pa.Get(i).As<Napi::Object>();
    RistPeerOptions po;
    po.url = StrOf(p, "url");
    po.weight = static_cast<uint32_t>(IntOf(p, "weight", 5));
    po.probeHost = StrOf(p, "probeHost");
    po.port = static_cast<uint16_t>(IntOf(p, "port", 0));
    opts_.peers.push_back(po);
  }
  Napi::Value pump = o.Get("pump");
  if (pump.IsFunction()) pump_ = Napi::Persistent(pump.As<Napi::Function>());

  for (const RistPeerOptions& po : opts_.peers) {
    if (po.probeHost.empty()) continue;
    // the simple profile also takes the next port (RTCP)
    for (int k = 0; k < (opts_.profile == 0 ? 2 : 1); k++) {
      const uint16_t port = static_cast<uint16_t>(po.port + k);
      const int err = ProbeFree(po.probeHost, port);
      if (err != 0) ThrowErrno(env, "bind", err, po.probeHost + ":" + std::to_string(port));
    }
  }
  st_ = std::make_shared<RistState>();
  st_->allowIp = opts_.allowIp;
  auto fail = [&](const std::string& what) {
    if (ctx_) rist_destroy(ctx_);
    ctx_ = nullptr;
    if (log_) rist_logging_settings_free2(&log_);
    throw CodedError(env, "ERR_RIST", what);
  };
  EnsureRistGlobalLog();  // before the first rist_logging_set (see rist_log.h)
  if (rist_logging_set(&log_, static_cast<rist_log_level>(opts_.logLevel), KeepRistLog<RistState>, st_.get(),
                       nullptr, nullptr) != 0) {
    fail("rist_logging_set failed");
  }
  const rist_profile profile = opts_.profile == 0 ? RIST_PROFILE_SIMPLE : RIST_PROFILE_MAIN;
  if (rist_receiver_create(&ctx_, profile, log_) != 0) fail("rist_receiver_create failed");
  rist_auth_handler_set(ctx_, OnConnect, OnDisconnect, st_.get());
  rist_connection_status_callback_set(ctx_, OnStatus, st_.get());
  rist_stats_callback_set(ctx_, opts_.statsIntervalMs, OnStats, st_.get());
  for (const RistPeerOptions& po : opts_.peers) {
    rist_peer_config* cfg = nullptr;
    if (rist_parse_address2(po.url.c_str(), &cfg) != 0 || !cfg) {
      fail("cannot parse peer address " + po.url);
    }
    cfg->recovery_mode = RIST_RECOVERY_MODE_TIME;
    cfg->recovery_length_min = opts_.bufferMs;
    cfg->recovery_length_max = opts_.bufferMs;
    cfg->recovery_rtt_min = opts_.rttMinMs;
    cfg->recovery_rtt_max = opts_.rttMaxMs;
    cfg->session_timeout = opts_.sessionTimeoutMs;
    cfg->weight = po.weight;
    if (!opts_.secret.empty() && profile != RIST_PROFILE_SIMPLE) {
      std::strncpy(cfg->secret, opts_.secret.c_str(), sizeof cfg->secret - 1);
      cfg->secret[sizeof cfg->secret - 1] = '\0';
      cfg->key_size = opts_.keySize;
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
      fail("cannot open peer " + po.url + (why.empty() ? "" : ": " + why));
    }
  }
  if (rist_receiver_data_callback_set2(ctx_, OnData, this) != 0) {
    fail("rist_receiver_data_callback_set2 failed");
  }
  // Ready for batches before librist starts delivering them.
  st_->tsfn = Napi::ThreadSafeFunction::New(
      env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}), "sluice-rist", 0, 1);
  st_->tsfnOpen = true;
  onData_ = Napi::Persistent(info[1].As<Napi::Function>());
  st_->wrap = this;
  timer_ = std::thread([this] {
    NameThread("sluice-rist");
    Time();
  });
  if (rist_start(ctx_) != 0) {
    st_->wrap = nullptr;
    {
      std::lock_guard<std::mutex> lock(batchMu_);
      st_->stop = true;
      batchCv_.notify_one();
    }
    timer_.join();
    st_->tsfnOpen = false;
    st_->tsfn.Release();
    onData_.Reset();
    fail("rist_start failed");
  }
  open_ = true;
  Ref();  // an open receiver lives (and keeps the loop alive) until close()
}

RistReceiverWrap::~RistReceiverWrap() { Shutdown(); }

void RistReceiverWrap::Complete(RistBatch*& cur) {
  RistBatch* b = cur;
  cur = nullptr;
  st_->batches++;
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    if (static_cast<int>(st_->ready.size()) >= opts_.queueBatches) {
      // JS is behind: shed the newest batch here rather than block librist or grow the queue.
      st_->queueDrops++;
      delete b;
      return;
    }
    st_->ready.push_back(b);
  }
  st_->Signal();
}

// librist hands each block to OnData on its flow's output thread (no thread of ours in the
// data path, no wake-up per packet); the block joins the current batch, which is completed
// when full here, or at its deadline by the timer thread — that one sleeps until the deadline
// of the batch being filled, or until the first block after a quiet spell.
int RistReceiverWrap::OnData(void* arg, rist_data_block* block) {
  static_cast<RistReceiverWrap*>(arg)->Take(block);
  return 0;
}

void RistReceiverWrap::Take(rist_data_block* block) {
  std::unique_lock<std::mutex> lock(batchMu_);
  if (!cur_) {
    cur_ = new RistBatch();
    cur_->data.reserve(static_cast<size_t>(opts_.batchBlocks) * kTypicalBlock);
    cur_->lengths.reserve(static_cast<size_t>(opts_.batchBlocks));
    first_ = Clock::now();
    if (timerIdle_) batchCv_.notify_one();  // a deadline to keep
  }
  const auto* p = static_cast<const uint8_t*>(block->payload);
  cur_->data.insert(cur_->data.end(), p, p + block->payload_len);
  cur_->lengths.push_back(static_cast<int32_t>(block->payload_len));
  st_->blocks++;
  st_->bytes += block->payload_len;
  if (block->flags & RIST_DATA_FLAGS_DISCONTINUITY) st_->discontinuities++;
  rist_receiver_data_block_free2(&block);
  if (static_cast<int>(cur_->lengths.size()) >= opts_.batchBlocks) Complete(cur_);
}

void RistReceiverWrap::Time() {
  const auto latency = std::chrono::milliseconds(opts_.batchLatencyMs);
  std::unique_lock<std::mutex> lock(batchMu_);
  while (!st_->stop) {
    if (!cur_) {
      timerIdle_ = true;
      batchCv_.wait(lock, [this] { return cur_ != nullptr || st_->stop.load(); });
      timerIdle_ = false;
      continue;
    }
    const Clock::time_point due = first_ + latency;
    if (Clock::now() >= due) {
      Complete(cur_);
      continue;
    }
    batchCv_.wait_until(lock, due);
  }
  delete cur_;
  cur_ = nullptr;
}

void RistReceiverWrap::Pump(Napi::Env env) {
  const Clock::time_point start = Clock::now();
  std::optional<Napi::Error> failure;
  for (;;) {
    if (!open_) return;
    RistBatch* b = nullptr;
    {
      std::lock_guard<std::mutex> lock(st_->mu);
      if (st_->ready.empty()) break;
      b = st_->ready.front();
      st_->ready.pop_front();
    }
    Napi::HandleScope scope(env);
    try {
      Emit(env, b);
    } catch (const Napi::Error& e) {
      if (!failure) failure = e;
    }
    if (Clock::now() - start >= kDrainBudget) break;
  }
  if (!open_) return;
  size_t left;
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    left = st_->ready.size();
  }
  AfterSlice(st_->pending, pump_, left, st_->mu, [this] { return st_->ready.size(); }, Value());
  if (failure) failure->ThrowAsJavaScriptException();
}

void RistReceiverWrap::Emit(Napi::Env env, RistBatch* b) {
  std::unique_ptr<RistBatch> own(b);
  // Copied into the receiver's one reused block as [payloads | pad to 4 | int32 lengths], as
  // the UDP receiver does (views valid until onData returns).
  const size_t count = b->lengths.size();
  const size_t dataLen = b->data.size();
  Napi::ArrayBuffer ab = slab_.Fill(env, b->data.data(), dataLen, b->lengths.data(), count);
  onData_.Call({ab, Napi::Number::New(env, static_cast<double>(count)),
                Napi::Number::New(env, static_cast<double>(dataLen))});
}

Napi::Value RistReceiverWrap::Drain(const Napi::CallbackInfo& info) {
  if (open_) Pump(info.Env());
  return info.Env().Undefined();
}

Napi::Value RistReceiverWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  RistState& s = *st_;
  auto n = [&](const char* k, double v) { o.Set(k, Napi::Number::New(env, v)); };
  n("blocks", static_cast<double>(s.blocks.load()));
  n("bytes", static_cast<double>(s.bytes.load()));
  n("batches", static_cast<double>(s.batches.load()));
  n("queueDrops", static_cast<double>(s.queueDrops.load()));
  n("discontinuities", static_cast<double>(s.discontinuities.load()));
  n("rejected", static_cast<double>(s.rejected.load()));
  n("connects", static_cast<double>(s.connects.load()));
  n("timeouts", static_cast<double>(s.timeouts.load()));
  n("peersConnected", static_cast<double>(s.peersConnected.load()));
  std::lock_guard<std::mutex> lock(s.mu);
  n("queued", static_cast<double>(s.ready.size()));
  n("statsReports", static_cast<double>(s.statsReports));
  n("bandwidth", s.bandwidth);
  n("retryBandwidth", s.retryBandwidth);
  n("quality", s.quality);
  n("rtt", s.rtt);
  n("received", static_cast<double>(s.received));
  n("missing", static_cast<double>(s.missing));
  n("reordered", static_cast<double>(s.reordered));
  n("recovered", static_cast<double>(s.recovered));
  n("recoveredOneRetry", static_cast<double>(s.recoveredOneRetry));
  n("lost", static_cast<double>(s.lost));
  n("lastReceived", static_cast<double>(s.lastReceived));
  n("lastLost", static_cast<double>(s.lastLost));
  n("lastMissing", static_cast<double>(s.lastMissing));
  n("lastRecovered", static_cast<double>(s.lastRecovered));
  n("errors", static_cast<double>(s.errors));
  o.Set("lastLog", Napi::String::New(env, s.lastLog));
  n("keyFailures", static_cast<double>(s.keyFailures.count));
  n("keyFailureAgoMs", RistKeyFailureAgoMs(s.keyFailures));
  o.Set("lastKeyFailure", Napi::String::New(env, s.keyFailures.last));
  o.Set("lastRejectedIp", Napi::String::New(env, s.lastRejectedIp));
  return o;
}

Napi::Value RistReceiverWrap::Close(const Napi::CallbackInfo& info) {
  if (open_) {
    Shutdown();
    Unref();
    slab_.Reset();
  }
  return info.Env().Undefined();
}

void RistReceiverWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  st_->wrap = nullptr;
  // rist_destroy joins librist's threads: no callback of it (OnData included) runs after it.
  if (ctx_) rist_destroy(ctx_);
  ctx_ = nullptr;
  {
    std::lock_guard<std::mutex> lock(batchMu_);
    st_->stop = true;
    batchCv_.notify_one();
  }
  if (timer_.joinable()) timer_.join();
  if (log_) rist_logging_settings_free2(&log_);
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    for (RistBatch* b : st_->ready) delete b;  // never delivered after close()
    st_->ready.clear();
  }
  st_->tsfnOpen = false;
  st_->tsfn.Release();  // a signal still queued finds the receiver closed
  onData_.Reset();
  pump_.Reset();
}

}  // namespace sluice

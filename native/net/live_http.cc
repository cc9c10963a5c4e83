#include "net/live_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "util/thread_name.h"

namespace sluice {

namespace {

/** A request header block longer than this goes to JavaScript (players send ~200 bytes). */
constexpr size_t kPeekBytes = 8192;
constexpr uint64_t kWakeTag = ~0ull;
constexpr int kEvents = 128;
constexpr int kSweepMs = 1000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

char Lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

/** `s[0, n)` equals the lower-case literal `lit`, ignoring ASCII case. */
bool NameIs(const char* s, size_t n, const char* lit) {
  size_t m = strlen(lit);
  if (n != m) return false;
  for (size_t i = 0; i < n; i++)
    if (Lower(s[i]) != lit[i]) return false;
  return true;
}

bool IsTchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

/** True when the comma-separated `value` has a token equal (ignoring case) to `lit`. */
bool HasToken(const char* v, size_t n, const char* lit) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    size_t s = i;
    while (i < n && v[i] != ',') i++;
    size_t e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (NameIs(v + s, e - s, lit)) return true;
  }
  return false;
}

enum class Parse { kIncomplete, kNotOurs, kOurs };

struct Request {
  const char* target = nullptr;
  size_t targetLength = 0;
  size_t length = 0;           // bytes of the request, final CRLF included
  bool fromZero = false;       // `Range: bytes=0-`: the whole body, as a 206 where ranges apply
  bool close = false;          // `Connection: close`: answer, then end the connection
};

/** `v[0, n)` without the optional whitespace around it equals `lit` (case-sensitive). */
bool TrimmedIs(const char* v, size_t n, const char* lit) {
  while (n > 0 && (*v == ' ' || *v == '\t')) v++, n--;
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  return n == strlen(lit) && memcmp(v, lit, n) == 0;
}

/**
 * Reads a request header block. kOurs only for `GET <target> HTTP/1.1` with exactly one Host,
 * no body, no Expect/Upgrade/Transfer-Encoding, and no Range but `bytes=0-` (ffmpeg and VLC
 * send it on every request): the requests the app answers with the whole body. Everything else
 * (including anything malformed, which Node then refuses) is kNotOurs.
 */
Parse ParseRequest(const char* b, size_t n, Request& r) {
  // The request line.
  static const char kGet[] = "GET /";
  if (n < sizeof kGet - 1) return memcmp(b, kGet, n) == 0 ? Parse::kIncomplete : Parse::kNotOurs;
  if (memcmp(b, kGet, sizeof kGet - 1) != 0) return Parse::kNotOurs;
  size_t i = 4;
  r.target = b + i;
  while (i < n && b[i] != ' ') {
    unsigned char c = static_cast<unsigned char>(b[i]);
    if (c <= 0x20 || c >= 0x7f) return Parse::kNotOurs;
    i++;
  }
  if (i == n) return Parse::kIncomplete;
  r.targetLength = static_cast<size_t>(b + i - r.target);
  static const char kVersion[] = " HTTP/1.1\r\n";
  size_t vl = sizeof kVersion - 1;
  if (n - i < vl) return memcmp(b + i, kVersion, n - i) == 0 ? Parse::kIncomplete : Parse::kNotOurs;
  if (memcmp(b + i, kVersion, vl) != 0) return Parse::kNotOurs;
  i += vl;
  // Header lines up to the empty one.
  int hosts = 0, ranges = 0;
  for (;;) {
    size_t s = i;
    while (i < n && b[i] != '\n') i++;
    if (i == n) return Parse::kIncomplete;
    if (i == s || b[i - 1] != '\r') return Parse::kNotOurs;  // a bare LF
    size_t e = i - 1;                                          // the line is b[s, e)
    i++;
    if (e == s) break;  // the empty line: end of the header block
    size_t colon = s;
    while (colon < e && b[colon] != ':') {
      if (!IsTchar(static_cast<unsigned char>(b[colon]))) return Parse::kNotOurs;
      colon++;
    }
    if (colon == e || colon == s) return Parse::kNotOurs;
    const char* name = b + s;
    size_t nl = colon - s;
    const char* v = b + colon + 1;
    size_t vn = e - colon - 1;
    for (size_t k = 0; k < vn; k++) {
      unsigned char c = static_cast<unsigned char>(v[k]);
      if ((c < 0x20 && c != '\t') || c == 0x7f) return Parse::kNotOurs;
    }
    if (NameIs(name, nl, "host")) {
      hosts++;
    } else if (NameIs(name, nl, "connection")) {
      if (HasToken(v, vn, "upgrade")) return Parse::kNotOurs;
      if (HasToken(v, vn, "close")) r.close = true;
    } else if (NameIs(name, nl, "range")) {
      if (++ranges > 1 || !TrimmedIs(v, vn, "bytes=0-")) return Parse::kNotOurs;
      r.fromZero = true;
    } else if (NameIs(name, nl, "content-length")) {
      if (!TrimmedIs(v, vn, "0")) return Parse::kNotOurs;
    } else if (NameIs(name, nl, "transfer-encoding") || NameIs(name, nl, "expect") ||
               NameIs(name, nl, "upgrade")) {
      return Parse::kNotOurs;
    }
  }
  if (hosts != 1) return Parse::kNotOurs;
  r.length = i;
  return Parse::kOurs;
}

/** The passes table's key: query, address and stream, each ended by a newline (none of them
 *  can hold one: the query is a request target's, the rest are ours). */
void PassKey(std::string& k, const char* query, size_t ql, const char* ip, const char* stream,
             size_t sl) {
  k.assign(query, ql);
  k.push_back('\n');
  k.append(ip);
  k.push_back('\n');
  k.append(stream, sl);
}

/** The peer of `fd` as Node's `remoteAddress` writes it (IPv4, or IPv6 such as ::ffff:a.b.c.d). */
void PeerAddress(int fd, char* out, size_t n) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  out[0] = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, out, n);
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, out, n);
}

Napi::Array IdArray(Napi::Env env, const std::vector<uint64_t>& ids) {
  Napi::Array r = Napi::Array::New(env, ids.size());
  for (size_t i = 0; i < ids.size(); i++)
    r.Set(i, Napi::Number::New(env, static_cast<double>(ids[i])));
  return r;
}

// Engines' tables by share id, for publishers in other environments (worker threads).
std::mutex gShareMu;
std::unordered_map<uint32_t, std::weak_ptr<LiveTable>> gShares;
uint32_t gNextShare = 1;

/** The entry `publish(key, head, body, releaseId, fromZeroHead?, forPassHolders?)` describes. */
std::shared_ptr<LiveEntry> EntryOf(const Napi::CallbackInfo& info, std::string& key) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsBuffer() || !info[2].IsBuffer() ||
      !info[3].IsNumber())
    throw Napi::TypeError::New(env, "publish(key, head, body, releaseId, fromZeroHead?, forPassHolders?)");
  auto e = std::make_shared<LiveEntry>();
  auto head = info[1].As<Napi::Buffer<uint8_t>>();
  e->head.assign(reinterpret_cast<const char*>(head.Data()), head.Length());
  auto body = info[2].As<Napi::Buffer<uint8_t>>();
  e->body = body.Data();
  e->bodyLength = body.Length();
  if (info.Length() > 4 && info[4].IsBuffer()) {
    auto h = info[4].As<Napi::Buffer<uint8_t>>();
    e->fromZeroHead.assign(reinterpret_cast<const char*>(h.Data()), h.Length());
  }
  if (info.Length() > 5 && info[5].IsBoolean()) e->forPassHolders = info[5].As<Napi::Boolean>();
  key = info[0].As<Napi::String>().Utf8Value();
  return e;
}

/** Puts `e` under `key`; false (and `e` not kept) when the table is closed. */
bool Put(LiveTable& t, const std::string& key, std::shared_ptr<LiveEntry> e) {
  std::shared_ptr<LiveEntry> old;
  std::lock_guard<std::mutex> lk(t.mu);
  if (t.closed) return false;
  auto& slot = t.map[key];
  old = std::move(slot);
  slot = std::move(e);
  return true;
}  // `old` lets go after the lock (declared before it)

}  // namespace

LiveEntry::~LiveEntry() {
  if (sink && releaseId != 0) sink->Queue(releaseId);
}

void LiveSink::Queue(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_) return;
  ids_.push_back(id);
  if (ids_.size() == 1 && notify_) notify_();
}

std::vector<uint64_t> LiveSink::Take() {
  std::vector<uint64_t> out;
  std::lock_guard<std::mutex> lk(mu_);
  out.swap(ids_);
  return out;
}

std::vector<uint64_t> LiveSink::Close() {
  std::vector<uint64_t> out;
  std::lock_guard<std::mutex> lk(mu_);
  open_ = false;
  notify_ = nullptr;
  out.swap(ids_);
  return out;
}

void LiveSink::Kill() {
  std::lock_guard<std::mutex> lk(useMu);
  dead = true;
}

void LiveTable::RemoveOf(const LiveSink* sink) {
  std::vector<std::shared_ptr<LiveEntry>> gone;
  std::lock_guard<std::mutex> lk(mu);
  for (auto it = map.begin(); it != map.end();) {
    if (it->second->sink.get() == sink) {
      gone.push_back(std::move(it->second));
      it = map.erase(it);
    } else {
      ++it;
    }
  }
}  // `gone` lets go after the lock

Napi::Function LiveHttp::Define(Napi::Env env) {
  Napi::Function f = DefineClass(env, "LiveHttp",
                     {
                         InstanceMethod("publish", &LiveHttp::Publish),
                         InstanceMethod("unpublish", &LiveHttp::Unpublish),
                         InstanceMethod("adopt", &LiveHttp::Adopt),
                         InstanceMethod("closeServer", &LiveHttp::CloseServer),
                         InstanceMethod("stats", &LiveHttp::Stats),
                         InstanceMethod("setGated", &LiveHttp::SetGated),
                         InstanceMethod("grant", &LiveHttp::Grant),
                         InstanceMethod("revoke", &LiveHttp::Revoke),
                         InstanceMethod("revokeAll", &LiveHttp::RevokeAll),
                         InstanceMethod("takePassUse", &LiveHttp::TakePassUse),
                         InstanceMethod("close", &LiveHttp::Close),
                         InstanceAccessor("shareId", &LiveHttp::ShareId, nullptr),
                         InstanceMethod("published", &LiveHttp::Published),
                     });
  f.Set("Publisher", LivePublisher::Define(env));
  return f;
}

// new LiveHttp(onEvents(handbacks: number[] /* fd, server pairs */, releases: number[]),
//              { keepAliveMs, stallMs })
LiveHttp::LiveHttp(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LiveHttp>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction())
    throw Napi::TypeError::New(env, "LiveHttp: onEvents must be a function");
  if (info.Length() > 1 && info[1].IsObject()) {
    Napi::Object o = info[1].As<Napi::Object>();
    if (o.Has("keepAliveMs")) keepAliveMs_ = o.Get("keepAliveMs").As<Napi::Number>().Int32Value();
    if (o.Has("stallMs")) stallMs_ = o.Get("stallMs").As<Napi::Number>().Int32Value();
  }
  if (keepAliveMs_ < 1000 || stallMs_ < 1000)
    throw Napi::RangeError::New(env, "LiveHttp: keepAliveMs and stallMs must be at least 1000");
  tsfn_ = Tsfn::New(env, info[0].As<Napi::Function>(), "sluice-live-http", 0, 1, this);
  tsfn_.Unref(env);
  tsfnLive_ = true;
  sink_ = std::make_shared<LiveSink>([this] {
    if (tsfnLive_ && !closed_) tsfn_.NonBlockingCall();
  });
  {
    std::lock_guard<std::mutex> lk(gShareMu);
    shareId_ = gNextShare++;
    gShares[shareId_] = table_;
  }
  // Added after the thread-safe function, so it runs before Node tears that down at exit.
  env_ = env;
  napi_add_env_cleanup_hook(env, &LiveHttp::AtExit, this);
  hooked_ = true;
}

void LiveHttp::AtExit(void* arg) {
  // The environment is going away without close(): stop the thread; Node releases the
  // thread-safe function itself.
  auto* self = static_cast<LiveHttp*>(arg);
  self->hooked_ = false;
  self->closed_ = true;
  self->Stop();
  self->sink_->Close();
  self->Unshare();
  self->tsfnLive_ = false;
}

void LiveHttp::Unshare() {
  {
    std::lock_guard<std::mutex> lk(gShareMu);
    gShares.erase(shareId_);
  }
  std::lock_guard<std::mutex> lk(table_->mu);
  table_->closed = true;
}

LiveHttp::~LiveHttp() {
  if (hooked_) napi_remove_env_cleanup_hook(env_, &LiveHttp::AtExit, this);
  closed_ = true;
  Stop();
  sink_->Close();
  Unshare();
  for (auto& kv : conns_) close(kv.second->fd);
  conns_.clear();
  for (auto& a : adopts_) close(a.first);
  adopts_.clear();
  {
    std::unordered_map<std::string, std::shared_ptr<LiveEntry>> gone;
    std::lock_guard<std::mutex> lk(table_->mu);
    gone.swap(table_->map);
  }
  {
    std::lock_guard<std::mutex> lk(evMu_);
    if (pending_ != nullptr) {
      for (auto& h : pending_->handbacks) close(h.first);
      delete pending_;
      pending_ = nullptr;
    }
  }
  if (tsfnLive_) tsfn_.Release();
  if (epoll_ >= 0) close(epoll_);
  if (wake_ >= 0) close(wake_);
}

void LiveHttp::CallJs(Napi::Env env, Napi::Function fn, LiveHttp* self, LiveEvents*) {
  if (env == nullptr || self == nullptr) return;
  LiveEvents* ev;
  {
    std::lock_guard<std::mutex> lk(self->evMu_);
    ev = self->pending_;
    self->pending_ = nullptr;
  }
  std::vector<uint64_t> releases = self->sink_->Take();
  if (ev == nullptr && releases.empty()) return;
  size_t nh = ev != nullptr ? ev->handbacks.size() : 0;
  Napi::Array h = Napi::Array::New(env, nh * 2);
  for (size_t i = 0; i < nh; i++) {
    h.Set(i * 2, Napi::Number::New(env, ev->handbacks[i].first));
    h.Set(i * 2 + 1, Napi::Number::New(env, ev->handbacks[i].second));
  }
  delete ev;
  fn.Call({h, IdArray(env, releases)});
}

// publish(key, head, body, releaseId, fromZeroHead?, forPassHolders?)
Napi::Value LiveHttp::Publish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) throw Napi::Error::New(env, "LiveHttp: closed");
  std::string key;
  auto e = EntryOf(info, key);
  e->releaseId = static_cast<uint64_t>(info[3].As<Napi::Number>().Int64Value());
  e->sink = sink_;
  Put(*table_, key, std::move(e));
  return env.Undefined();
}

Napi::Value LiveHttp::ShareId(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), shareId_);
}

Napi::Value LiveHttp::Published(const Napi::CallbackInfo& info) {
  std::lock_guard<std::mutex> lk(table_->mu);
  return Napi::Number::New(info.Env(), static_cast<double>(table_->map.size()));
}

Napi::Value LiveHttp::Unpublish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString())
    throw Napi::TypeError::New(env, "unpublish(key)");
  std::string key = info[0].As<Napi::String>().Utf8Value();
  std::shared_ptr<LiveEntry> old;
  {
    std::lock_guard<std::mutex> lk(table_->mu);
    auto it = table_->map.find(key);
    if (it == table_->map.end()) return Napi::Boolean::New(env, false);
    old = std::move(it->second);
    table_->map.erase(it);
  }
  return Napi::Boolean::New(env, true);
}

// adopt(fd, server): takes a duplicate of a fresh connection's socket; the caller then destroys
// its own socket object. False when the descriptor cannot be duplicated.
Napi::Value LiveHttp::Adopt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) return Napi::Boolean::New(env, false);
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "adopt(fd, server)");
  int fd = info[0].As<Napi::Number>().Int32Value();
  uint32_t server = info[1].As<Napi::Number>().Uint32Value();
  int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (d < 0) return Napi::Boolean::New(env, false);
  int fl = fcntl(d, F_GETFL);
  if (fl < 0 || ((fl & O_NONBLOCK) == 0 && fcntl(d, F_SETFL, fl | O_NONBLOCK) < 0)) {
    close(d);
    return Napi::Boolean::New(env, false);
  }
  std::string err = Start();
  if (!err.empty()) {
    close(d);
    throw Napi::Error::New(env, "LiveHttp: " + err);
  }
  {
    std::lock_guard<std::mutex> lk(cmdMu_);
    adopts_.emplace_back(d, server);
  }
  adopted_++;
  Wake();
  return Napi::Boolean::New(env, true);
}

// setGated(on): while on, only requests holding a live pass are answered (docs/billing.md).
Napi::Value LiveHttp::SetGated(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBoolean()) throw Napi::TypeError::New(env, "setGated(on)");
  gated_ = info[0].As<Napi::Boolean>().Value();
  return env.Undefined();
}

// grant(query, ip, stream, ttlMs): requests whose query is exactly `query`, from `ip`, for a
// path under `/stream/`, may be answered natively for `ttlMs` from now (a renewal keeps the
// use counted so far).
Napi::Value LiveHttp::Grant(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsString() || !info[2].IsString() ||
      !info[3].IsNumber())
    throw Napi::TypeError::New(env, "grant(query, ip, stream, ttlMs)");
  std::string q = info[0].As<Napi::String>().Utf8Value();
  std::string ip = info[1].As<Napi::String>().Utf8Value();
  std::string stream = info[2].As<Napi::String>().Utf8Value();
  int64_t ttl = info[3].As<Napi::Number>().Int64Value();
  std::string k;
  PassKey(k, q.data(), q.size(), ip.c_str(), stream.data(), stream.size());
  std::lock_guard<std::mutex> lk(passMu_);
  Pass& p = passes_[k];
  p.expiresMs = NowMs() + ttl;
  if (!p.use) p.use = std::make_shared<PassUse>();
  return env.Undefined();
}

Napi::Value LiveHttp::Revoke(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsString() || !info[2].IsString())
    throw Napi::TypeError::New(env, "revoke(query, ip, stream)");
  std::string q = info[0].As<Napi::String>().Utf8Value();
  std::string ip = info[1].As<Napi::String>().Utf8Value();
  std::string stream = info[2].As<Napi::String>().Utf8Value();
  std::string k;
  PassKey(k, q.data(), q.size(), ip.c_str(), stream.data(), stream.size());
  std::lock_guard<std::mutex> lk(passMu_);
  return Napi::Boolean::New(env, passes_.erase(k) > 0);
}

Napi::Value LiveHttp::RevokeAll(const Napi::CallbackInfo& info) {
  std::lock_guard<std::mutex> lk(passMu_);
  passes_.clear();
  return info.Env().Undefined();
}

// takePassUse(): [key, requests, bytes, …] of every pass used since the last call (counters
// reset); expired passes are dropped here after their last use is reported.
Napi::Value LiveHttp::TakePassUse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  int64_t now = NowMs();
  std::lock_guard<std::mutex> lk(passMu_);
  for (auto it = passes_.begin(); it != passes_.end();) {
    uint64_t r = it->second.use->requests.exchange(0);
    uint64_t b = it->second.use->bytes.exchange(0);
    if (r > 0 || b > 0) {
      out.Set(n++, Napi::String::New(env, it->first));
      out.Set(n++, Napi::Number::New(env, static_cast<double>(r)));
      out.Set(n++, Napi::Number::New(env, static_cast<double>(b)));
    }
    if (it->second.expiresMs <= now) it = passes_.erase(it);
    else ++it;
  }
  return out;
}

Napi::Value LiveHttp::CloseServer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "closeServer(id)");
  if (thread_.joinable()) {
    std::lock_guard<std::mutex> lk(cmdMu_);
    closeServers_.push_back(info[0].As<Napi::Number>().Uint32Value());
  }
  Wake();
  return env.Undefined();
}

Napi::Value LiveHttp::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  auto n = [&](const char* k, uint64_t v) { o.Set(k, Napi::Number::New(env, double(v))); };
  n("connections", connections_.load());
  n("adopted", adopted_.load());
  n("served", served_.load());
  n("handedBack", handedBack_.load());
  n("closedIdle", closedIdle_.load());
  n("bytes", bytes_.load());
  n("cut", cut_.load());
  size_t entries;
  {
    std::lock_guard<std::mutex> lk(table_->mu);
    entries = table_->map.size();
  }
  n("entries", entries);
  return o;
}

// close(): stops the thread, closes its connections, drops every entry; returns the release
// ids that were still due (the caller lets go of their memory itself).
Napi::Value LiveHttp::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) return Napi::Array::New(env, 0);
  closed_ = true;
  Stop();
  for (auto& kv : conns_) close(kv.second->fd);
  conns_.clear();
  connections_ = 0;
  {
    std::lock_guard<std::mutex> lk(cmdMu_);
    for (auto& a : adopts_) close(a.first);
    adopts_.clear();
  }
  // Attached publishers' entries go too (their releases to their own environments).
  Unshare();
  {
    std::unordered_map<std::string, std::shared_ptr<LiveEntry>> gone;
    std::lock_guard<std::mutex> lk(table_->mu);
    gone.swap(table_->map);
  }
  LiveEvents* ev;
  {
    std::lock_guard<std::mutex> lk(evMu_);
    ev = pending_;
    pending_ = nullptr;
  }
  if (ev != nullptr) {
    for (auto& h : ev->handbacks) close(h.first);
    delete ev;
  }
  Napi::Array r = IdArray(env, sink_->Close());
  if (tsfnLive_) {
    tsfnLive_ = false;
    tsfn_.Release();
  }
  if (epoll_ >= 0) close(epoll_);
  if (wake_ >= 0) close(wake_);
  epoll_ = wake_ = -1;
  return r;
}

std::string LiveHttp::Start() {
  if (thread_.joinable()) return "";
  if (epoll_ < 0) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) return std::string("epoll_create1: ") + strerror(errno);
  }
  if (wake_ < 0) {
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_ < 0) return std::string("eventfd: ") + strerror(errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) < 0) {
      std::string e = std::string("epoll_ctl: ") + strerror(errno);
      close(wake_);
      wake_ = -1;
      return e;
    }
  }
  stop_ = false;
  thread_ = std::thread([this] {
    NameThread("sluice-http");
    Run();
  });
  return "";
}

void LiveHttp::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  Wake();
  thread_.join();
}

void LiveHttp::Wake() {
  if (wake_ < 0) return;
  uint64_t one = 1;
  ssize_t w = write(wake_, &one, sizeof one);
  (void)w;  // a full counter already wakes the thread
}

void LiveHttp::Run() {
  epoll_event evs[kEvents];
  int64_t nextSweep = NowMs() + kSweepMs;
  while (!stop_.load(std::memory_order_relaxed)) {
    int64_t now = NowMs();
    int timeout = nextSweep > now ? static_cast<int>(nextSweep - now) : 0;
    int n = epoll_wait(epoll_, evs, kEvents, timeout);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      if (evs[i].data.u64 == kWakeTag) {
        uint64_t v;
        ssize_t r = read(wake_, &v, sizeof v);
        (void)r;
        TakeCommands();
        continue;
      }
      auto it = conns_.find(static_cast<int>(evs[i].data.u64));
      if (it != conns_.end()) OnEvent(*it->second, evs[i].events);
    }
    now = NowMs();
    if (now >= nextSweep) {
      Sweep(now);
      nextSweep = now + kSweepMs;
    }
  }
}

void LiveHttp::TakeCommands() {
  std::vector<std::pair<int, uint32_t>> adopts;
  std::vector<uint32_t> closes;
  {
    std::lock_guard<std::mutex> lk(cmdMu_);
    adopts.swap(adopts_);
    closes.swap(closeServers_);
  }
  for (uint32_t server : closes) {
    std::vector<LiveConn*> gone;
    for (auto& kv : conns_)
      if (kv.second->server == server) gone.push_back(kv.second.get());
    for (LiveConn* c : gone) Drop(*c);
  }
  int64_t now = NowMs();
  for (auto& a : adopts) {
    auto c = std::make_unique<LiveConn>();
    c->fd = a.first;
    c->server = a.second;
    c->deadlineMs = now + keepAliveMs_;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = static_cast<uint64_t>(a.first);
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, a.first, &ev) < 0) {
      close(a.first);
      continue;
    }
    PeerAddress(a.first, c->ip, sizeof c->ip);
    LiveConn& ref = *c;
    conns_[a.first] = std::move(c);
    connections_++;
    Serve(ref);
  }
}

void LiveHttp::OnEvent(LiveConn& c, uint32_t events) {
  if ((events & EPOLLERR) != 0) {
    Drop(c);
    return;
  }
  if ((events & EPOLLRDHUP) != 0) c.peerClosed = true;
  if (c.entry) {
    if (!Write(c) || c.entry) return;
  }
  Serve(c);
}

bool LiveHttp::Serve(LiveConn& c) {
  static thread_local char buf[kPeekBytes];
  if (c.lingering) return Drain(c);
  for (;;) {
    ssize_t n = recv(c.fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      Drop(c);  // the client closed
      return false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      Drop(c);
      return false;
    }
    Request r;
    Parse p = ParseRequest(buf, static_cast<size_t>(n), r);
    // An incomplete request waits for more bytes, unless the client has stopped sending.
    if (p == Parse::kIncomplete && static_cast<size_t>(n) < sizeof buf && !c.peerClosed)
      return true;
    if (p != Parse::kOurs) {
      HandBack(c);
      return false;
    }
    // The path is the table's key; a query is answered only as a viewer pass while gated.
    const char* q = static_cast<const char*>(memchr(r.target, '?', r.targetLength));
    size_t pathLength = q ? static_cast<size_t>(q - r.target) : r.targetLength;
    std::shared_ptr<PassUse> use;
    if (q || gated_.load(std::memory_order_relaxed)) {
      // `/stream/…`: the stream is the first path segment.
      const char* slash = static_cast<const char*>(memchr(r.target + 1, '/', pathLength - 1));
      if (!q || !slash || !gated_.load(std::memory_order_relaxed) ||
          !(use = FindPass(q + 1, r.targetLength - pathLength - 1, c.ip, r.target + 1,
                           static_cast<size_t>(slash - r.target - 1)))) {
        HandBack(c);
        return false;
      }
    }
    std::shared_ptr<LiveEntry> e = Find(r.target, pathLength);
    if (!e || (use && !e->forPassHolders)) {
      HandBack(c);
      return false;
    }
    if (use) use->requests++;
    c.use = std::move(use);
    // Consume exactly the request (it was peeked whole, so it is all there).
    ssize_t got = recv(c.fd, buf, r.length, MSG_DONTWAIT);
    if (got != static_cast<ssize_t>(r.length)) {
      Drop(c);
      return false;
    }
    static const char kClose[] = "Date: %s\r\nConnection: close\r\n\r\n";
    static const char kKeep[] =
        "Date: %s\r\nConnection: keep-alive\r\nKeep-Alive: timeout=%d\r\n\r\n";
    int tl = r.close ? snprintf(c.tail, sizeof c.tail, kClose, DateHeader())
                     : snprintf(c.tail, sizeof c.tail, kKeep, DateHeader(), keepAliveMs_ / 1000);
    const std::string& head = r.fromZero && !e->fromZeroHead.empty() ? e->fromZeroHead : e->head;
    c.closeAfter = r.close;
    c.vec[0] = {const_cast<char*>(head.data()), head.size()};
    c.vec[1] = {c.tail, static_cast<size_t>(tl)};
    c.vec[2] = {const_cast<uint8_t*>(e->body), e->bodyLength};
    c.first = 0;
    c.entry = std::move(e);
    if (!Write(c)) return false;
    if (c.entry || c.lingering) return true;  // the rest when the socket has room
  }
}

bool LiveHttp::Write(LiveConn& c) {
  while (c.entry) {
    msghdr m{};
    m.msg_iov = c.vec + c.first;
    m.msg_iovlen = static_cast<size_t>(3 - c.first);
    // The body's environment may be exiting: its memory is read only while it is known alive.
    LiveSink& sink = *c.entry->sink;
    ssize_t w = 0;
    bool dead;
    {
      std::lock_guard<std::mutex> lk(sink.useMu);
      dead = sink.dead;
      if (!dead) w = sendmsg(c.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (dead) {
      cut_++;
      Drop(c);
      return false;
    }
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c.deadlineMs = NowMs() + stallMs_;
        return true;
      }
      Drop(c);
      return false;
    }
    bytes_ += static_cast<uint64_t>(w);
    if (c.use) c.use->bytes += static_cast<uint64_t>(w);
    size_t left = static_cast<size_t>(w);
    while (c.first < 3 && left >= c.vec[c.first].iov_len) {
      left -= c.vec[c.first].iov_len;
      c.vec[c.first].iov_len = 0;
      c.first++;
    }
    if (c.first < 3) {
      c.vec[c.first].iov_base = static_cast<char*>(c.vec[c.first].iov_base) + left;
      c.vec[c.first].iov_len -= left;
      continue;
    }
    c.entry.reset();
    c.use.reset();
    c.served = true;
    c.deadlineMs = NowMs() + keepAliveMs_;
    served_++;
    if (c.closeAfter) {
      // As Node ends such a connection, but without a reset: our side is shut (FIN after the
      // response) and the descriptor is kept until the client closes or the deadline passes.
      shutdown(c.fd, SHUT_WR);
      c.lingering = true;
      return Drain(c);
    }
  }
  return true;
}

bool LiveHttp::Drain(LiveConn& c) {
  static thread_local char sink[4096];
  for (;;) {
    ssize_t n = recv(c.fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    Drop(c);  // the client closed (or the socket failed)
    return false;
  }
}

void LiveHttp::Drop(LiveConn& c) {
  int fd = c.fd;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);  // destroys c
  connections_--;
}

void LiveHttp::HandBack(LiveConn& c) {
  int fd = c.fd;
  uint32_t server = c.server;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  conns_.erase(fd);  // destroys c
  connections_--;
  handedBack_++;
  bool signal = false;
  {
    std::lock_guard<std::mutex> lk(evMu_);
    if (pending_ == nullptr) {
      pending_ = new LiveEvents();
      signal = true;
    }
    pending_->handbacks.emplace_back(fd, server);
  }
  if (signal && tsfnLive_) tsfn_.NonBlockingCall();
}

void LiveHttp::Sweep(int64_t nowMs) {
  std::vector<LiveConn*> due;
  for (auto& kv : conns_)
    if (nowMs >= kv.second->deadlineMs) due.push_back(kv.second.get());
  for (LiveConn* c : due) {
    if (c->entry || c->lingering) {
      Drop(*c);  // no write progress for stallMs, or the client never closed after ours
      continue;
    }
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0 || !c->served) {
      // A request that never completed, or a fresh connection that sent nothing yet: Node's
      // own timeouts decide.
      HandBack(*c);
    } else {
      closedIdle_++;
      Drop(*c);  // keep-alive timeout, as Node's server would close it
    }
  }
}

std::shared_ptr<LiveEntry> LiveHttp::Find(const char* key, size_t length) {
  // One lookup key per thread, reused: no allocation per request.
  static thread_local std::string k;
  k.assign(key, length);
  std::lock_guard<std::mutex> lk(table_->mu);
  auto it = table_->map.find(k);
  return it == table_->map.end() ? nullptr : it->second;
}

std::shared_ptr<PassUse> LiveHttp::FindPass(const char* query, size_t ql, const char* ip,
                                             const char* stream, size_t sl) {
  static thread_local std::string k;
  PassKey(k, query, ql, ip, stream, sl);
  std::lock_guard<std::mutex> lk(passMu_);
  auto it = passes_.find(k);
  if (it == passes_.end() || it->second.expiresMs <= NowMs()) return nullptr;
  return it->second.use;
}

const char* LiveHttp::DateHeader() {
  time_t t = time(nullptr);
  if (t == dateSecond_) return date_;
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm g;
  gmtime_r(&t, &g);
  snprintf(date_, sizeof date_, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[g.tm_wday], g.tm_mday,
           kMonths[g.tm_mon], g.tm_year + 1900, g.tm_hour, g.tm_min, g.tm_sec);
  dateSecond_ = t;
  return date_;
}


Napi::Function LivePublisher::Define(Napi::Env env) {
  return DefineClass(env, "LivePublisher",
                     {
                         InstanceMethod("publish", &LivePublisher::Publish),
                         InstanceMethod("unpublish", &LivePublisher::Unpublish),
                         InstanceMethod("close", &LivePublisher::Close),
                     });
}

// new LiveHttp.Publisher(shareId, onReleases(releases: number[]))
LivePublisher::LivePublisher(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<LivePublisher>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsFunction())
    throw Napi::TypeError::New(env, "LiveHttp.Publisher(shareId, onReleases)");
  uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  {
    std::lock_guard<std::mutex> lk(gShareMu);
    auto it = gShares.find(id);
    if (it != gShares.end()) table_ = it->second.lock();
  }
  if (!table_)
    throw Napi::Error::New(env, "LiveHttp.Publisher: no open live engine has share id " +
                                    std::to_string(id) +
                                    " in this process; pass the shareId of a LiveDelivery "
                                    "that is not closed");
  sink_ = std::make_shared<LiveSink>([this] { tsfn_.NonBlockingCall(); });
  // The tsfn's context is the sink; the finaliser holds it until Node is done with the tsfn.
  auto* keep = new std::shared_ptr<LiveSink>(sink_);
  tsfn_ = Tsfn::New(env, info[1].As<Napi::Function>(), "sluice-live-publish", 0, 1, sink_.get(),
                    [](Napi::Env, std::shared_ptr<LiveSink>* k, LiveSink*) { delete k; }, keep);
  tsfn_.Unref(env);
  env_ = env;
  napi_add_env_cleanup_hook(env, &LivePublisher::AtExit, this);
  hooked_ = true;
}

void LivePublisher::AtExit(void* arg) {
  // The worker is exiting: its heap (and so its bodies) goes with it. Node releases the tsfn.
  auto* self = static_cast<LivePublisher*>(arg);
  self->hooked_ = false;
  self->Shut();
}

LivePublisher::~LivePublisher() {
  if (shut_) return;
  Shut();
  tsfn_.Release();
}

void LivePublisher::Shut() {
  if (shut_) return;
  shut_ = true;
  if (hooked_) {
    napi_remove_env_cleanup_hook(env_, &LivePublisher::AtExit, this);
    hooked_ = false;
  }
  sink_->Kill();  // waits out a send of one of our bodies in progress; none starts after
  sink_->Close();  // every body may go now: no release notices (the env may be exiting)
  table_->RemoveOf(sink_.get());
}

void LivePublisher::CallJs(Napi::Env env, Napi::Function fn, LiveSink* sink, void*) {
  if (env == nullptr || sink == nullptr) return;
  std::vector<uint64_t> ids = sink->Take();
  if (!ids.empty()) fn.Call({IdArray(env, ids)});
}

// publish(key, head, body, releaseId, fromZeroHead?, forPassHolders?): throws when the engine
// was closed (the body is not kept and no release comes for it).
Napi::Value LivePublisher::Publish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (shut_) throw Napi::Error::New(env, "LiveHttp.Publisher: closed");
  std::string key;
  auto e = EntryOf(info, key);
  e->sink = sink_;
  if (!Put(*table_, key, e))
    throw Napi::Error::New(env, "LiveHttp.Publisher: the live engine was closed; publish to "
                                "the engine the main thread makes next");
  // Only now has an id: a refused entry asks for no release.
  e->releaseId = static_cast<uint64_t>(info[3].As<Napi::Number>().Int64Value());
  return env.Undefined();
}

// unpublish(key): only an entry this publisher put there.
Napi::Value LivePublisher::Unpublish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString())
    throw Napi::TypeError::New(env, "unpublish(key)");
  std::string key = info[0].As<Napi::String>().Utf8Value();
  std::shared_ptr<LiveEntry> old;
  std::lock_guard<std::mutex> lk(table_->mu);
  auto it = table_->map.find(key);
  if (it == table_->map.end() || it->second->sink != sink_) return Napi::Boolean::New(env, false);
  old = std::move(it->second);
  table_->map.erase(it);
  return Napi::Boolean::New(env, true);
}  // `old` lets go after the lock

// close(): removes this publisher's entries and cuts responses still sending its bodies; every
// body it published may be let go of when it returns.
Napi::Value LivePublisher::Close(const Napi::CallbackInfo& info) {
  if (!shut_) {
    Shut();
    tsfn_.Release();
  }
  return info.Env().Undefined();
}

}  // namespace sluice

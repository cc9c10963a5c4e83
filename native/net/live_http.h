// LiveHttp: answers plain keep-alive GETs for published live responses (HLS-TS segments and
// playlists) on connections the HTTP listener hands over, from one epoll thread, without any
// per-request JavaScript. Every request it cannot answer exactly as the JavaScript path would
// (another path, a query, HEAD, a Range, `Connection: close`, HTTP/1.0, anything unusual) is left
// unread in the kernel and the connection goes back to JavaScript for good. Why and how:
// docs/ott.md, "Native live delivery".
#pragma once
#include <napi.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sluice {

/** Where the release ids of one environment's published bodies go: that environment's own
 *  thread-safe function (a worker's Buffer may only be let go of on the worker's thread). */
class LiveSink {
 public:
  /** `notify` runs (under the sink's lock) when ids start waiting; it wakes the owning env. */
  explicit LiveSink(std::function<void()> notify) : notify_(std::move(notify)) {}
  /** Any thread: `id`'s body is no longer used. Dropped once the sink is closed. */
  void Queue(uint64_t id);
  /** The owning env's thread: the ids waiting. */
  std::vector<uint64_t> Take();
  /** No more notifications; returns the ids still waiting. */
  std::vector<uint64_t> Close();
  /** The owning env is gone: after this returns no response reads its bodies again. */
  void Kill();

  // Held by the epoll thread around each send of a body of this sink, so Kill() waits out a
  // send in progress; `dead` is read under it.
  std::mutex useMu;
  bool dead = false;

 private:
  std::mutex mu_;
  std::vector<uint64_t> ids_;
  std::function<void()> notify_;
  bool open_ = true;
};

struct LiveEntry;

/** The published responses by key, shared by the engine and the publishers attached to it from
 *  other environments (process-wide, by share id). */
struct LiveTable {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<LiveEntry>> map;
  bool closed = false;
  /** Removes the entries published through `sink`; they let go outside the lock. */
  void RemoveOf(const LiveSink* sink);
};

/** One published response: a header block from JavaScript (status line and fixed headers, each
 *  ending in CRLF, without Date/Connection and the final CRLF) and a body in memory JavaScript
 *  keeps valid until it is told `release` ran for `releaseId`. */
struct LiveEntry {
  std::string head;
  /** The head for `Range: bytes=0-` (a 206 with Content-Range for segments); empty: `head`. */
  std::string fromZeroHead;
  const uint8_t* body = nullptr;
  size_t bodyLength = 0;
  uint64_t releaseId = 0;
  /** Whether a viewer holding a pass (a request with a query, while gated) may be answered
   *  from it: true for bodies that are the same for every viewer (segments); false for
   *  documents, which name their URIs with each viewer's credentials (docs/billing.md). */
  bool forPassHolders = false;
  /** The publishing environment's release channel. */
  std::shared_ptr<LiveSink> sink;
  ~LiveEntry();
};

/** What one viewer pass has been used for (native responses and their bytes). Written by the
 *  epoll thread, read and reset by the JS thread. */
struct PassUse {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bytes{0};
};

/** A viewer's leave to be served natively while billing gates playback: its credentials query,
 *  client address and stream name (the key), until `expiresMs` (steady clock). */
struct Pass {
  int64_t expiresMs = 0;
  std::shared_ptr<PassUse> use;
};

/** A connection the thread serves. Touched by the thread only (after adoption). */
struct LiveConn {
  int fd = -1;
  uint32_t server = 0;
  char ip[48] = {0};                 // the peer's address as Node writes it (remoteAddress)
  std::shared_ptr<LiveEntry> entry;  // the response being written, if any
  std::shared_ptr<PassUse> use;      // the pass the response in flight is counted on
  char tail[112];                    // Date, Connection and Keep-Alive headers, final CRLF
  struct iovec vec[3];
  int first = 0;  // first iovec with bytes left
  int64_t deadlineMs = 0;
  bool served = false;      // at least one response completed
  bool peerClosed = false;  // the client shut its sending side (EPOLLRDHUP)
  bool closeAfter = false;  // the response in flight ends the connection (Connection: close)
  bool lingering = false;   // our side is shut: waiting for the client's close, input discarded
};

struct LiveEvents {
  std::vector<std::pair<int, uint32_t>> handbacks;  // fd, server
  std::vector<uint64_t> releases;
};

class LiveHttp : public Napi::ObjectWrap<LiveHttp> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit LiveHttp(const Napi::CallbackInfo& info);
  ~LiveHttp() override;

  static void CallJs(Napi::Env env, Napi::Function fn, LiveHttp* self, LiveEvents* ev);
  /** Environment cleanup hook: the process exits without close(). */
  static void AtExit(void* self);

 private:
  using Tsfn = Napi::TypedThreadSafeFunction<LiveHttp, LiveEvents, CallJs>;

  Napi::Value Publish(const Napi::CallbackInfo& info);
  Napi::Value Unpublish(const Napi::CallbackInfo& info);
  Napi::Value Adopt(const Napi::CallbackInfo& info);
  Napi::Value CloseServer(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value SetGated(const Napi::CallbackInfo& info);
  Napi::Value Grant(const Napi::CallbackInfo& info);
  Napi::Value Revoke(const Napi::CallbackInfo& info);
  Napi::Value RevokeAll(const Napi::CallbackInfo& info);
  Napi::Value TakePassUse(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value ShareId(const Napi::CallbackInfo& info);
  Napi::Value Published(const Napi::CallbackInfo& info);
  /** The engine's table leaves the registry: attached publishers can publish no more. */
  void Unshare();

  /** Starts the thread (and makes its epoll set); an error message, empty on success. */
  std::string Start();
  void Stop();
  void Run();
  void Wake();
  void TakeCommands();
  void OnEvent(LiveConn& c, uint32_t events);
  /** Answers every complete request waiting on `c`. False when `c` is gone (closed or handed
   *  back). */
  bool Serve(LiveConn& c);
  /** Writes what it can of the response in flight. False when `c` is gone. */
  bool Write(LiveConn& c);
  /** Reads and discards what a lingering connection's client still sends. False when `c` is
   *  gone (the client closed). */
  bool Drain(LiveConn& c);
  void Drop(LiveConn& c);
  void HandBack(LiveConn& c);
  void Sweep(int64_t nowMs);
  void Flush();
  const char* DateHeader();

  std::shared_ptr<LiveEntry> Find(const char* key, size_t length);
  /** The use counter of a live pass for `query` from `ip` on `stream`; null when none. */
  std::shared_ptr<PassUse> FindPass(const char* query, size_t ql, const char* ip,
                                    const char* stream, size_t sl);

  Tsfn tsfn_;
  napi_env env_ = nullptr;
  bool hooked_ = false;
  std::atomic<bool> tsfnLive_{false};
  int epoll_ = -1;
  int wake_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};

  std::shared_ptr<LiveTable> table_ = std::make_shared<LiveTable>();
  std::shared_ptr<LiveSink> sink_;  // this env's releases
  uint32_t shareId_ = 0;

  // Viewer authorisation (docs/billing.md): while gated, a request is answered only with a
  // live pass for its query, address and stream; everything else goes to JavaScript.
  std::atomic<bool> gated_{false};
  std::mutex passMu_;
  std::unordered_map<std::string, Pass> passes_;

  // Commands from the JS thread to the epoll thread.
  std::mutex cmdMu_;
  std::vector<std::pair<int, uint32_t>> adopts_;
  std::vector<uint32_t> closeServers_;

  // Events from either thread to JavaScript.
  std::mutex evMu_;
  LiveEvents* pending_ = nullptr;

  // Epoll thread only.
  std::unordered_map<int, std::unique_ptr<LiveConn>> conns_;
  int64_t dateSecond_ = -1;
  char date_[40] = {0};

  int keepAliveMs_ = 5000;
  int stallMs_ = 60000;

  std::atomic<uint64_t> adopted_{0}, served_{0}, handedBack_{0}, bytes_{0}, closedIdle_{0},
      connections_{0};
  /** Responses cut because the environment that published their body exited. */
  std::atomic<uint64_t> cut_{0};
};

/** A worker environment's handle on an engine made in another environment (by share id):
 *  publishes into its table, with release ids coming back to this environment only. When the
 *  environment exits (or close()), its entries are removed and responses still sending its
 *  bodies are cut. */
class LivePublisher : public Napi::ObjectWrap<LivePublisher> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit LivePublisher(const Napi::CallbackInfo& info);
  ~LivePublisher() override;
  static void CallJs(Napi::Env env, Napi::Function fn, LiveSink* sink, void*);
  static void AtExit(void* self);

 private:
  using Tsfn = Napi::TypedThreadSafeFunction<LiveSink, void, CallJs>;
  Napi::Value Publish(const Napi::CallbackInfo& info);
  Napi::Value Unpublish(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  /** Cuts responses sending this env's bodies, silences its channel, removes its entries. */
  void Shut();

  std::shared_ptr<LiveTable> table_;
  std::shared_ptr<LiveSink> sink_;
  Tsfn tsfn_;
  napi_env env_ = nullptr;
  bool hooked_ = false;
  bool shut_ = false;
};

}  // namespace sluice

// UdpReceiver: socket set-up (bind, multicast/SSM join on an interface address, receive
// buffer), the recvmmsg thread and the hand-off of batches to JS.
#include "net/udp_receiver.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "util/errors.h"

namespace sluice {

struct UdpBatch {
  enum Kind { kData = 0, kError = 1 } kind = kData;
  std::vector<uint8_t> data;
  std::vector<int32_t> lengths;
  std::string code, message;
};

namespace {

using Clock = std::chrono::steady_clock;

in_addr ParseIp(Napi::Env env, const Napi::Object& o, const char* key) {
  in_addr a{};
  Napi::Value v = o.Get(key);
  std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (s.empty()) return a;
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) {
    throw CodedError(env, "ERR_NATIVE_ARG", std::string(key) + " is not an IPv4 address: " + s);
  }
  return a;
}

int IntOf(const Napi::Object& o, const char* key, int def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : def;
}

}  // namespace

Napi::Function UdpReceiverWrap::Define(Napi::Env env) {
  return DefineClass(env, "UdpReceiver",
                     {
                         InstanceMethod("rejoin", &UdpReceiverWrap::Rejoin),
                         InstanceMethod("stats", &UdpReceiverWrap::Stats),
                         InstanceMethod("close", &UdpReceiverWrap::Close),
                         InstanceAccessor("grantedBufferSize", &UdpReceiverWrap::GrantedBufferSize,
                                          nullptr),
                         InstanceAccessor("port", &UdpReceiverWrap::Port, nullptr),
                     });
}

UdpReceiverWrap::UdpReceiverWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<UdpReceiverWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "UdpReceiver(options, onEvent)");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  opts_.port = static_cast<uint16_t>(IntOf(o, "port", 0));
  opts_.address = ParseIp(env, o, "address");
  opts_.bindIf = ParseIp(env, o, "bindIf");
  opts_.ssm = ParseIp(env, o, "ssm");
  opts_.hasSsm = opts_.ssm.s_addr != 0;
  opts_.multicast = IN_MULTICAST(ntohl(opts_.address.s_addr));
  opts_.bufferSize = IntOf(o, "bufferSize", 0);
  opts_.maxDatagram = IntOf(o, "maxDatagram", opts_.maxDatagram);
  opts_.batchDatagrams = IntOf(o, "batchDatagrams", opts_.batchDatagrams);
  opts_.batchLatencyMs = IntOf(o, "batchLatencyMs", opts_.batchLatencyMs);
  opts_.queueBatches = IntOf(o, "queueBatches", opts_.queueBatches);
  Open(env);  // throws with fd_ closed on failure
  closedFlag_ = new std::atomic<bool>(false);
  tsfn_ = Tsfn::New(env, info[1].As<Napi::Function>(), "sluice-udp-receiver",
                    static_cast<size_t>(opts_.queueBatches), 1, closedFlag_,
                    [](Napi::Env, void*, std::atomic<bool>* flag) { delete flag; });
  open_ = true;
  thread_ = std::thread([this] { Run(); });
  Ref();  // an open receiver lives (and keeps the loop alive) until close(), like a dgram socket
}

UdpReceiverWrap::~UdpReceiverWrap() { Shutdown(); }

void UdpReceiverWrap::Open(Napi::Env env) {
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) ThrowErrno(env, "socket", errno);
  auto fail = [&](const char* call, const std::string& what) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    ThrowErrno(env, call, err, what);
  };
  int one = 1;
  // Several receivers may share a multicast group and port (each gets a copy). A unicast port
  // is not shared: with SO_REUSEADDR the last socket would silently take the traffic, so a
  // second bind fails with EADDRINUSE instead.
  if (opts_.multicast && setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) {
    fail("setsockopt", "SO_REUSEADDR");
  }
  // Kernel drop counter delivered with each datagram: lets stats() report socket-buffer loss.
  setsockopt(fd_, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
  if (opts_.bufferSize > 0) {
    // SO_RCVBUFFORCE ignores net.core.rmem_max but needs CAP_NET_ADMIN; fall back when refused.
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &opts_.bufferSize, sizeof(int)) < 0) {
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &opts_.bufferSize, sizeof(int));
    }
  }
  int size = 0;
  socklen_t sl = sizeof size;
  getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, &sl);
  granted_ = size / 2;  // Linux doubles the value for its bookkeeping and reports the double
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(opts_.port);
  // A multicast socket binds the group so it sees that group only; unicast binds the address
  // asked for, else the bind-if address, else any.
  if (opts_.multicast || opts_.address.s_addr != 0) sa.sin_addr = opts_.address;
  else sa.sin_addr = opts_.bindIf;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    fail("bind", std::string(ip) + ":" + std::to_string(opts_.port));
  }
  sockaddr_in bound{};
  socklen_t bl = sizeof bound;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &bl);
  boundPort_ = ntohs(bound.sin_port);
  if (opts_.multicast) {
    int zero = 0;
    setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero);
    try {
      Membership(env, true);
    } catch (...) {
      ::close(fd_);
      fd_ = -1;
      throw;
    }
  }
  stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stopFd_ < 0) fail("eventfd", "");
}

void UdpReceiverWrap::Membership(Napi::Env env, bool add) {
  if (opts_.hasSsm) {
    ip_mreq_source m{};
    m.imr_multiaddr = opts_.address;
    m.imr_interface = opts_.bindIf;
    m.imr_sourceaddr = opts_.ssm;
    int opt = add ? IP_ADD_SOURCE_MEMBERSHIP : IP_DROP_SOURCE_MEMBERSHIP;
    if (setsockopt(fd_, IPPROTO_IP, opt, &m, sizeof m) < 0) {
      ThrowErrno(env, "setsockopt", errno, add ? "IP_ADD_SOURCE_MEMBERSHIP" : "IP_DROP_SOURCE_MEMBERSHIP");
    }
    return;
  }
  ip_mreqn m{};
  m.imr_multiaddr = opts_.address;
  m.imr_address = opts_.bindIf;
  m.imr_ifindex = 0;
  int opt = add ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP;
  if (setsockopt(fd_, IPPROTO_IP, opt, &m, sizeof m) < 0) {
    ThrowErrno(env, "setsockopt", errno, add ? "IP_ADD_MEMBERSHIP" : "IP_DROP_MEMBERSHIP");
  }
}

Napi::Value UdpReceiverWrap::Rejoin(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open_) throw CodedError(env, "ERR_NATIVE_CLOSED", "receiver is closed");
  if (opts_.multicast) {
    Membership(env, false);
    Membership(env, true);
  }
  return env.Undefined();
}

Napi::Value UdpReceiverWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("datagrams", static_cast<double>(datagrams_.load()));
  o.Set("bytes", static_cast<double>(bytes_.load()));
  o.Set("batches", static_cast<double>(batches_.load()));
  o.Set("drops", static_cast<double>(drops_.load()));
  o.Set("queueDrops", static_cast<double>(queueDrops_.load()));
  o.Set("truncated", static_cast<double>(truncated_.load()));
  return o;
}

Napi::Value UdpReceiverWrap::GrantedBufferSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), granted_);
}

Napi::Value UdpReceiverWrap::Port(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), boundPort_);
}

Napi::Value UdpReceiverWrap::Close(const Napi::CallbackInfo& info) {
  if (open_) {
    Shutdown();
    Unref();
  }
  return info.Env().Undefined();
}

void UdpReceiverWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  closedFlag_->store(true);  // batches still queued for JS are discarded, not delivered
  uint64_t one = 1;
  if (write(stopFd_, &one, sizeof one) < 0) {
    // eventfd writes only fail on counter overflow; the thread also polls with a timeout
  }
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  ::close(stopFd_);
  fd_ = stopFd_ = -1;
  tsfn_.Release();
}

void UdpReceiverWrap::CallJs(Napi::Env env, Napi::Function cb, std::atomic<bool>* closed,
                             UdpBatch* b) {
  if (env == nullptr || cb.IsEmpty() || (closed && closed->load())) {
    delete b;
    return;
  }
  try {
    if (b->kind == UdpBatch::kError) {
      std::unique_ptr<UdpBatch> own(b);
      cb.Call({Napi::Number::New(env, 1), Napi::String::New(env, b->message),
               Napi::String::New(env, b->code)});
      return;
    }
    const size_t count = b->lengths.size();
    Napi::Int32Array lengths = Napi::Int32Array::New(env, count);
    std::memcpy(lengths.Data(), b->lengths.data(), count * sizeof(int32_t));
    // The batch's bytes become the Buffer's memory (no copy); freed when JS lets go of it.
    Napi::Buffer<uint8_t> buf = Napi::Buffer<uint8_t>::New(
        env, b->data.data(), b->data.size(), [](Napi::Env, uint8_t*, UdpBatch* h) { delete h; }, b);
    cb.Call({Napi::Number::New(env, 0), buf, Napi::Number::New(env, static_cast<double>(count)),
             lengths});
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();  // surfaces as an uncaught exception, like an event handler's
  }
}

bool UdpReceiverWrap::Deliver(UdpBatch* b) {
  napi_status st = tsfn_.NonBlockingCall(b);
  if (st == napi_ok) return true;
  delete b;
  if (st == napi_queue_full) {
    queueDrops_++;
    return true;
  }
  return false;  // closing
}

void UdpReceiverWrap::Run() {
  const int maxN = opts_.batchDatagrams;
  const size_t slot = static_cast<size_t>(opts_.maxDatagram);
  constexpr size_t kCtrl = CMSG_SPACE(sizeof(uint32_t));
  constexpr int kIdlePollMs = 1000;
  constexpr int kErrorBackoffMs = 100;
  std::vector<uint8_t> scratch(slot * maxN);
  std::vector<uint8_t> ctrl(kCtrl * maxN);
  std::vector<iovec> iov(maxN);
  std::vector<mmsghdr> msgs(maxN);
  for (int i = 0; i < maxN; i++) {
    iov[i] = {scratch.data() + i * slot, slot};
  }
  const auto latency = std::chrono::milliseconds(opts_.batchLatencyMs);
  UdpBatch* cur = nullptr;
  Clock::time_point first{};
  pollfd pfd[2] = {{fd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
  std::string lastErr;
  for (;;) {
    int timeout = kIdlePollMs;
    if (cur) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(first + latency - Clock::now());
      timeout = left.count() > 0 ? static_cast<int>(left.count()) : 0;
    }
    int r = poll(pfd, 2, timeout);
    if (r < 0 && errno != EINTR) break;
    if (pfd[1].revents) break;
    if (r > 0 && (pfd[0].revents & POLLIN)) {
      const int room = maxN - (cur ? static_cast<int>(cur->lengths.size()) : 0);
      for (int i = 0; i < room; i++) {
        std::memset(&msgs[i], 0, sizeof(mmsghdr));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = ctrl.data() + i * kCtrl;
        msgs[i].msg_hdr.msg_controllen = kCtrl;
      }
      int n = recvmmsg(fd_, msgs.data(), room, MSG_DONTWAIT, nullptr);
      if (n < 0) {
        int err = errno;
        if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
          std::string code = ErrnoName(err);
          if (code != lastErr) {  // report each new fault once, not once per wake-up
            lastErr = code;
            auto* e = new UdpBatch();
            e->kind = UdpBatch::kError;
            e->code = code;
            e->message = ErrnoMessage("recvmmsg", err);
            if (!Deliver(e)) break;
          }
          poll(&pfd[1], 1, kErrorBackoffMs);
          if (pfd[1].revents) break;
        }
      } else if (n > 0) {
        lastErr.clear();
        if (!cur) {
          cur = new UdpBatch();
          cur->data.reserve(static_cast<size_t>(maxN) * 1400);
          cur->lengths.reserve(maxN);
          first = Clock::now();
        }
        for (int i = 0; i < n; i++) {
          size_t len = msgs[i].msg_len;
          if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) truncated_++;
          if (len > slot) len = slot;
          for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
              uint32_t dropped;
              std::memcpy(&dropped, CMSG_DATA(c), sizeof dropped);
              drops_.store(dropped);
            }
          }
          const uint8_t* src = scratch.data() + i * slot;
          cur->data.insert(cur->data.end(), src, src + len);
          cur->lengths.push_back(static_cast<int32_t>(len));
          bytes_ += len;
        }
        datagrams_ += n;
      }
    }
    if (cur && (static_cast<int>(cur->lengths.size()) >= maxN || Clock::now() - first >= latency)) {
      batches_++;
      UdpBatch* b = cur;
      cur = nullptr;
      if (!Deliver(b)) break;
    }
  }
  delete cur;
}

}  // namespace sluice

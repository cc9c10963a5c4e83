// UdpReceiver: socket set-up (bind, multicast/SSM join on an interface address, receive
// buffer), registration with the shared receive thread (udp_hub.cc) and the hand-off of its
// batches to this receiver's JS callback.
#include "net/udp_receiver.h"

#include <arpa/inet.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "util/errors.h"
#include "util/options.h"

namespace sluice {

namespace {

/** A receiver's pool starts with a block filling, one queued and one in JS … */
constexpr size_t kInitialBlocks = 3;
/** … and grows while JS falls behind, to this many. */
constexpr size_t kMaxBlocks = 8;

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

}  // namespace

Napi::Function UdpReceiverWrap::Define(Napi::Env env) {
  return DefineClass(env, "UdpReceiver",
                     {
                         InstanceMethod("rejoin", &UdpReceiverWrap::Rejoin),
                         InstanceMethod("stats", &UdpReceiverWrap::Stats),
                         InstanceMethod("close", &UdpReceiverWrap::Close),
                         InstanceMethod("setPriority", &UdpReceiverWrap::SetPriority),
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
  opts_.batch.maxDatagram = IntOf(o, "maxDatagram", opts_.batch.maxDatagram);
  opts_.batch.batchDatagrams = IntOf(o, "batchDatagrams", opts_.batch.batchDatagrams);
  opts_.batch.batchLatencyMs = IntOf(o, "batchLatencyMs", opts_.batch.batchLatencyMs);
  opts_.batch.queueBatches = IntOf(o, "queueBatches", opts_.batch.queueBatches);
  opts_.batch.queueBytes = Int64Of(o, "queueBytes", opts_.batch.queueBytes);
  opts_.batch.queueBytesTotal = Int64Of(o, "queueBytesTotal", opts_.batch.queueBytesTotal);
  // Without a pump (an older façade) every drain runs until the queues are empty.
  Napi::Value pump = o.Get("pump");
  const int fd = Open(env);  // throws with the socket closed on failure
  sock_ = std::make_shared<UdpSocketState>();
  sock_->fd = fd;
  sock_->opts = opts_.batch;
  sock_->priority = IntOf(o, "priority", 0);
  // Room for a full batch and its lengths. Blocks of large maxDatagram settings are mostly
  // untouched pages (the allocation is zero-filled lazily): resident memory follows the
  // datagrams received, not the size.
  const size_t payload =
      static_cast<size_t>(opts_.batch.batchDatagrams) * static_cast<size_t>(opts_.batch.maxDatagram);
  blockSize_ = BatchSlab::LengthsOffset(payload) +
               static_cast<size_t>(opts_.batch.batchDatagrams) * sizeof(int32_t);
  for (size_t i = 0; i < kInitialBlocks; i++) AddBlock(env);
  try {
    hub_ = UdpHub::For(env);
    hub_->Add(env, sock_, pump.IsFunction() ? pump.As<Napi::Function>() : Napi::Function());
  } catch (...) {
    ::close(fd);
    sock_->fd = -1;
    throw;
  }
  onEvent_ = Napi::Persistent(info[1].As<Napi::Function>());
  sock_->wrap = this;
  open_ = true;
  Ref();  // an open receiver lives (and keeps the loop alive) until close(), like a dgram socket
}

UdpReceiverWrap::~UdpReceiverWrap() { Shutdown(); }

void UdpReceiverWrap::AddBlock(Napi::Env env) {
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, blockSize_);
  UdpBlock block{static_cast<uint8_t*>(ab.Data()), static_cast<int>(blocks_.size())};
  blocks_.push_back(Napi::Persistent(ab));
  if (hub_) hub_->Release(*sock_, block);  // registered: under the hub's lock
  else sock_->freeBlocks.push_back(block);
}

int UdpReceiverWrap::Open(Napi::Env env) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) ThrowErrno(env, "socket", errno);
  auto fail = [&](const char* call, const std::string& what) {
    int err = errno;
    ::close(fd);
    ThrowErrno(env, call, err, what);
  };
  int one = 1;
  // Several receivers may share a multicast group and port (each gets a copy). A unicast port
  // is not shared: with SO_REUSEADDR the last socket would silently take the traffic, so a
  // second bind fails with EADDRINUSE instead.
  if (opts_.multicast && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) {
    fail("setsockopt", "SO_REUSEADDR");
  }
  if (opts_.bufferSize > 0) {
    // SO_RCVBUFFORCE ignores net.core.rmem_max but needs CAP_NET_ADMIN; fall back when refused.
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &opts_.bufferSize, sizeof(int)) < 0) {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opts_.bufferSize, sizeof(int));
    }
  }
  int size = 0;
  socklen_t sl = sizeof size;
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &sl);
  granted_ = size / 2;  // Linux doubles the value for its bookkeeping and reports the double
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(opts_.port);
  // A multicast socket binds the group so it sees that group only; unicast binds the address
  // asked for, else the bind-if address, else any.
  if (opts_.multicast || opts_.address.s_addr != 0) sa.sin_addr = opts_.address;
  else sa.sin_addr = opts_.bindIf;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    fail("bind", std::string(ip) + ":" + std::to_string(opts_.port));
  }
  sockaddr_in bound{};
  socklen_t bl = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bl);
  boundPort_ = ntohs(bound.sin_port);
  if (opts_.multicast) {
    int zero = 0;
    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero);
    try {
      Membership(env, fd, true);
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  return fd;
}

void UdpReceiverWrap::Membership(Napi::Env env, int fd, bool add) {
  if (opts_.hasSsm) {
    ip_mreq_source m{};
    m.imr_multiaddr = opts_.address;
    m.imr_interface = opts_.bindIf;
    m.imr_sourceaddr = opts_.ssm;
    int opt = add ? IP_ADD_SOURCE_MEMBERSHIP : IP_DROP_SOURCE_MEMBERSHIP;
    if (setsockopt(fd, IPPROTO_IP, opt, &m, sizeof m) < 0) {
      ThrowErrno(env, "setsockopt", errno, add ? "IP_ADD_SOURCE_MEMBERSHIP" : "IP_DROP_SOURCE_MEMBERSHIP");
    }
    return;
  }
  ip_mreqn m{};
  m.imr_multiaddr = opts_.address;
  m.imr_address = opts_.bindIf;
  m.imr_ifindex = 0;
  int opt = add ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP;
  if (setsockopt(fd, IPPROTO_IP, opt, &m, sizeof m) < 0) {
    ThrowErrno(env, "setsockopt", errno, add ? "IP_ADD_MEMBERSHIP" : "IP_DROP_MEMBERSHIP");
  }
}

Napi::Value UdpReceiverWrap::Rejoin(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open_) throw CodedError(env, "ERR_NATIVE_CLOSED", "receiver is closed");
  if (opts_.multicast) {
    Membership(env, sock_->fd, false);
    Membership(env, sock_->fd, true);
  }
  return env.Undefined();
}

Napi::Value UdpReceiverWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  UdpSocketState& s = *sock_;
  // Socket-buffer loss, read from the kernel when asked (SO_MEMINFO) rather than carried with
  // every datagram (SO_RXQ_OVFL cost a control message per datagram in the kernel and in the
  // hub: ~10 % of the receive path). Kept after close: the last reading stays.
  if (open_ && s.fd >= 0) {
    uint32_t mem[SK_MEMINFO_VARS] = {};
    socklen_t len = sizeof mem;
    if (getsockopt(s.fd, SOL_SOCKET, SO_MEMINFO, mem, &len) == 0 &&
        len > SK_MEMINFO_DROPS * sizeof(uint32_t)) {
      s.drops.store(mem[SK_MEMINFO_DROPS]);
    }
  }
  o.Set("datagrams", static_cast<double>(s.datagrams.load()));
  o.Set("bytes", static_cast<double>(s.bytes.load()));
  o.Set("batches", static_cast<double>(s.batches.load()));
  o.Set("drops", static_cast<double>(s.drops.load()));
  o.Set("queueDrops", static_cast<double>(s.queueDrops.load()));
  o.Set("queued", static_cast<double>(s.queued.load()));
  o.Set("queuedBytes", static_cast<double>(s.queuedBytes.load()));
  o.Set("truncated", static_cast<double>(s.truncated.load()));
  o.Set("shed", s.shed.load());
  o.Set("shedBatches", static_cast<double>(s.shedBatches.load()));
  o.Set("shedBytes", static_cast<double>(s.shedBytes.load()));
  return o;
}

Napi::Value UdpReceiverWrap::SetPriority(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "setPriority(priority): an integer");
  }
  if (open_) hub_->SetPriority(sock_, info[0].As<Napi::Number>().Int32Value());
  return env.Undefined();
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
    slab_.Reset();
    blocks_.clear();  // the hub no longer writes them (Shutdown unregistered the socket)
  }
  return info.Env().Undefined();
}

void UdpReceiverWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  sock_->wrap = nullptr;  // batches still queued for JS are discarded, not delivered
  hub_->Remove(sock_);    // the hub thread no longer reads the socket (stops if it was the last)
  ::close(sock_->fd);
  sock_->fd = -1;
  onEvent_.Reset();
}

void UdpReceiverWrap::Emit(Napi::Env env, UdpBatch* b) {
  std::unique_ptr<UdpBatch> own(b);
  Napi::Function cb = onEvent_.Value();
  if (b->kind == UdpBatch::kError) {
    cb.Call({Napi::Number::New(env, 1), Napi::String::New(env, b->message),
             Napi::String::New(env, b->code)});
    return;
  }
  if (b->kind == UdpBatch::kShed) {
    cb.Call({Napi::Number::New(env, 2), Napi::Boolean::New(env, b->shed)});
    return;
  }
  // The batch is copied into this receiver's slab as [datagrams | pad to 4 | int32 lengths]; the
  // façade makes the Buffer and the Int32Array as views of it, valid until onData returns (the
  // next batch overwrites them). One long-lived block instead of a new external ArrayBuffer per
  // batch keeps the external-memory figure V8 schedules full collections by flat.
  const size_t count = b->lengths.size();
  if (b->block.data) {  // written in place: only the lengths go after the payloads
    const size_t dataLen = b->used;
    std::memcpy(b->block.data + BatchSlab::LengthsOffset(dataLen), b->lengths.data(),
                count * sizeof(int32_t));
    Napi::ArrayBuffer ab = blocks_[static_cast<size_t>(b->block.index)].Value();
    try {
      cb.Call({Napi::Number::New(env, 0), ab, Napi::Number::New(env, static_cast<double>(count)),
               Napi::Number::New(env, static_cast<double>(dataLen))});
    } catch (...) {
      if (open_) hub_->Release(*sock_, b->block);
      throw;
    }
    // Back to the pool, unless onData closed the receiver (its blocks are then let go).
    if (open_) hub_->Release(*sock_, b->block);
    return;
  }
  const size_t dataLen = b->data.size();
  Napi::ArrayBuffer ab = slab_.Fill(env, b->data.data(), dataLen, b->lengths.data(), count);
  if (open_ && blocks_.size() < kMaxBlocks) AddBlock(env);  // JS fell behind the pool
  cb.Call({Napi::Number::New(env, 0), ab, Napi::Number::New(env, static_cast<double>(count)),
           Napi::Number::New(env, static_cast<double>(dataLen))});
}

}  // namespace sluice

// DvbDvr (dvr.h): demux filter, dvr reader thread, batches to JS.
#include "dvb/dvr.h"

#include <fcntl.h>
#include <linux/dvb/dmx.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "util/errors.h"
#include "util/thread_name.h"

namespace sluice {

namespace {

constexpr size_t kPacket = 188;
/** The reader wakes at least this often to see a stop or a batch past its latency. */
constexpr int kPollMs = 20;
/** One read takes at most this much (348 packets, just under 64 KiB). */
constexpr size_t kReadBytes = 348 * kPacket;

std::string DevPath(int adapter, const char* kind, int n) {
  return "/dev/dvb/adapter" + std::to_string(adapter) + "/" + kind + std::to_string(n);
}

}  // namespace

Napi::Function DvbDvrWrap::Define(Napi::Env env) {
  return DefineClass(env, "DvbDvr",
                     {InstanceMethod("stats", &DvbDvrWrap::Stats),
                      InstanceMethod("setPids", &DvbDvrWrap::SetPids),
                      InstanceMethod("close", &DvbDvrWrap::Close)});
}

// new DvbDvr({adapter, demux, pids, bufferBytes, batchBytes, batchLatencyMs, queueBatches},
//            onData(buffer))
DvbDvrWrap::DvbDvrWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DvbDvrWrap>(info) {
  Napi::Env env = info.Env();
  Napi::Object o = info[0].As<Napi::Object>();
  auto num = [&](const char* k) { return o.Get(k).As<Napi::Number>().Int64Value(); };
  opts_.adapter = static_cast<int>(num("adapter"));
  opts_.demux = static_cast<int>(num("demux"));
  opts_.bufferBytes = static_cast<uint32_t>(num("bufferBytes"));
  opts_.batchBytes = static_cast<size_t>(num("batchBytes"));
  opts_.batchLatencyMs = static_cast<int>(num("batchLatencyMs"));
  opts_.queueBatches = static_cast<size_t>(num("queueBatches"));
  Napi::Array pids = o.Get("pids").As<Napi::Array>();
  for (uint32_t i = 0; i < pids.Length(); i++)
    opts_.pids.push_back(static_cast<uint16_t>(pids.Get(i).As<Napi::Number>().Uint32Value()));

  std::string dmxPath = DevPath(opts_.adapter, "demux", opts_.demux);
  demux_ = open(dmxPath.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (demux_ < 0) ThrowErrno(env, "open", errno, dmxPath);
  auto fail = [&](const char* what) {
    int err = errno;
    Shutdown();
    ThrowErrno(env, "ioctl", err, what);
  };
  if (opts_.bufferBytes > 0 && ioctl(demux_, DMX_SET_BUFFER_SIZE, opts_.bufferBytes) < 0)
    fail("DMX_SET_BUFFER_SIZE");
  if (int err = SetFilter(opts_.pids)) {
    errno = err;
    fail("DMX_SET_PES_FILTER / DMX_ADD_PID");
  }
  std::string dvrPath = DevPath(opts_.adapter, "dvr", opts_.demux);
  dvr_ = open(dvrPath.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (dvr_ < 0) {
    int err = errno;
    Shutdown();
    ThrowErrno(env, "open", err, dvrPath);
  }

  st_ = std::make_shared<DvbDvrState>();
  st_->tsfn = Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "DvbDvr", 0, 1);
  reader_ = std::thread([this] {
    NameThread("sluice-dvr");
    Read();
  });
}

DvbDvrWrap::~DvbDvrWrap() { Shutdown(); }

int DvbDvrWrap::SetFilter(const std::vector<uint16_t>& pids) {
  dmx_pes_filter_params f{};
  f.pid = pids.at(0);
  f.input = DMX_IN_FRONTEND;
  f.output = DMX_OUT_TS_TAP;
  f.pes_type = DMX_PES_OTHER;
  f.flags = DMX_IMMEDIATE_START;
  if (ioctl(demux_, DMX_SET_PES_FILTER, &f) < 0) return errno;
  for (size_t i = 1; i < pids.size(); i++) {
    uint16_t pid = pids[i];
    if (ioctl(demux_, DMX_ADD_PID, &pid) < 0) return errno;
  }
  return 0;
}

// setPids(pids): the filter's new PID list. Between two lists of PIDs only the difference is
// sent (DMX_REMOVE_PID, then DMX_ADD_PID: the running filter keeps its other PIDs without a
// gap); to or from the whole TS (8192) the filter is set anew.
Napi::Value DvbDvrWrap::SetPids(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (demux_ < 0) throw CodedError(env, "ERR_NATIVE_CLOSED", "the dvr is closed");
  Napi::Array a = info[0].As<Napi::Array>();
  std::vector<uint16_t> next;
  for (uint32_t i = 0; i < a.Length(); i++)
    next.push_back(static_cast<uint16_t>(a.Get(i).As<Napi::Number>().Uint32Value()));
  auto has = [](const std::vector<uint16_t>& v, uint16_t p) {
    for (uint16_t x : v)
      if (x == p) return true;
    return false;
  };
  const std::vector<uint16_t>& cur = opts_.pids;
  bool whole = has(cur, 8192) || has(next, 8192);
  if (whole) {
    if (int err = SetFilter(next)) ThrowErrno(env, "ioctl", err, "DMX_SET_PES_FILTER / DMX_ADD_PID");
  } else {
    for (uint16_t p : cur) {
      if (has(next, p)) continue;
      uint16_t pid = p;
      if (ioctl(demux_, DMX_REMOVE_PID, &pid) < 0) ThrowErrno(env, "ioctl", errno, "DMX_REMOVE_PID");
    }
    for (uint16_t p : next) {
      if (has(cur, p)) continue;
      uint16_t pid = p;
      if (ioctl(demux_, DMX_ADD_PID, &pid) < 0) ThrowErrno(env, "ioctl", errno, "DMX_ADD_PID");
    }
  }
  opts_.pids = next;
  return env.Undefined();
}

void DvbDvrWrap::Read() {
  std::shared_ptr<DvbDvrState> st = st_;
  std::vector<uint8_t> cur;
  cur.reserve(opts_.batchBytes + kReadBytes);
  auto first = std::chrono::steady_clock::now();
  auto deliver = [&] {
    bool signal = false;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      if (st->ready.size() >= opts_.queueBatches) {
        st->queueDrops++;
      } else {
        signal = st->ready.empty();
        st->ready.push_back(std::move(cur));
        st->batches++;
      }
    }
    cur = std::vector<uint8_t>();
    cur.reserve(opts_.batchBytes + kReadBytes);
    if (!signal) return;
    // JS drains every batch queued when the call runs.
    st->tsfn.NonBlockingCall([st](Napi::Env env, Napi::Function cb) {
      std::deque<std::vector<uint8_t>> take;
      {
        std::lock_guard<std::mutex> lock(st->mu);
        take.swap(st->ready);
      }
      for (auto& b : take) {
        if (st->stop) return;
        cb.Call({Napi::Buffer<uint8_t>::Copy(env, b.data(), b.size())});
      }
    });
  };
  uint8_t buf[kReadBytes];
  size_t carry = 0;  // bytes of a packet cut by the previous read
  while (!st->stop) {
    pollfd p{dvr_, POLLIN, 0};
    int r = poll(&p, 1, kPollMs);
    if (r > 0 && (p.revents & POLLIN)) {
      ssize_t n = read(dvr_, buf + carry, sizeof buf - carry);
      if (n < 0) {
        if (errno == EOVERFLOW) st->overflows++;
        else if (errno != EAGAIN && errno != EINTR) st->readErrors++;
      } else if (n > 0) {
        size_t have = carry + static_cast<size_t>(n);
        size_t whole = have - have % kPacket;
        if (cur.empty()) first = std::chrono::steady_clock::now();
        cur.insert(cur.end(), buf, buf + whole);
        st->bytes += whole;
        carry = have - whole;
        if (carry) std::memmove(buf, buf + whole, carry);
      }
    }
    auto age = std::chrono::steady_clock::now() - first;
    if (!cur.empty() && (cur.size() >= opts_.batchBytes ||
                         age >= std::chrono::milliseconds(opts_.batchLatencyMs)))
      deliver();
  }
}

void DvbDvrWrap::Shutdown() {
  if (st_) {
    st_->stop = true;
    if (reader_.joinable()) reader_.join();
    st_->tsfn.Release();
    st_.reset();
  }
  if (dvr_ >= 0) close(dvr_), dvr_ = -1;
  if (demux_ >= 0) {
    ioctl(demux_, DMX_STOP);
    close(demux_);
    demux_ = -1;
  }
}

Napi::Value DvbDvrWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  if (!st_) return out;
  out.Set("bytes", static_cast<double>(st_->bytes));
  out.Set("batches", static_cast<double>(st_->batches));
  out.Set("queueDrops", static_cast<double>(st_->queueDrops));
  out.Set("overflows", static_cast<double>(st_->overflows));
  out.Set("readErrors", static_cast<double>(st_->readErrors));
  return out;
}

Napi::Value DvbDvrWrap::Close(const Napi::CallbackInfo& info) {
  Shutdown();
  return info.Env().Undefined();
}

}  // namespace sluice

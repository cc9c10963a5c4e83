// DvbCa (ca.h): the ca device's ioctls, and its reads and writes on a thread.
#include "dvb/ca.h"

#include <fcntl.h>
#include <linux/dvb/ca.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/errors.h"
#include "util/thread_name.h"

namespace sluice {

namespace {

/** The thread wakes at least this often to see a stop or a queued write. */
constexpr int kPollMs = 10;
/** A TPDU read at once: the kernel hands out one whole TPDU per read (two framing bytes, then at
 *  most a 64 KiB body with its header). */
constexpr size_t kReadBytes = 65536 + 16;

void Emit(const std::shared_ptr<DvbCaState>& st, std::vector<uint8_t> data, std::string error) {
  st->tsfn.NonBlockingCall([st, data = std::move(data), error = std::move(error)](
                               Napi::Env env, Napi::Function cb) {
    if (st->stop) return;
    if (!error.empty()) cb.Call({env.Null(), Napi::String::New(env, error)});
    else cb.Call({Napi::Buffer<uint8_t>::Copy(env, data.data(), data.size()), env.Null()});
  });
}

}  // namespace

Napi::Function DvbCaWrap::Define(Napi::Env env) {
  return DefineClass(env, "DvbCa",
                     {InstanceMethod("caps", &DvbCaWrap::Caps),
                      InstanceMethod("slotInfo", &DvbCaWrap::SlotInfo),
                      InstanceMethod("reset", &DvbCaWrap::Reset),
                      InstanceMethod("send", &DvbCaWrap::Send),
                      InstanceMethod("stats", &DvbCaWrap::Stats),
                      InstanceMethod("close", &DvbCaWrap::Close)});
}

// new DvbCa(adapter, index, onEvent(buffer | null, error | null))
DvbCaWrap::DvbCaWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DvbCaWrap>(info) {
  Napi::Env env = info.Env();
  int adapter = info[0].As<Napi::Number>().Int32Value();
  int index = info[1].As<Napi::Number>().Int32Value();
  std::string path = "/dev/dvb/adapter" + std::to_string(adapter) + "/ca" + std::to_string(index);
  fd_ = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) ThrowErrno(env, "open", errno, path);
  st_ = std::make_shared<DvbCaState>();
  st_->tsfn = Napi::ThreadSafeFunction::New(env, info[2].As<Napi::Function>(), "DvbCa", 0, 1);
  io_ = std::thread([this] {
    NameThread("sluice-ca");
    Run();
  });
}

DvbCaWrap::~DvbCaWrap() { Shutdown(); }

int DvbCaWrap::Fd(Napi::Env env) const {
  if (fd_ < 0) throw CodedError(env, "ERR_NATIVE_CLOSED", "the ca device is closed");
  return fd_;
}

void DvbCaWrap::Run() {
  std::shared_ptr<DvbCaState> st = st_;
  std::vector<uint8_t> buf(kReadBytes);
  while (!st->stop) {
    std::deque<std::vector<uint8_t>> out;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      out.swap(st->out);
    }
    for (auto& t : out) {
      if (write(fd_, t.data(), t.size()) == static_cast<ssize_t>(t.size())) {
        st->writes++;
      } else {
        st->errors++;
        Emit(st, {}, std::string("write: ") + ErrnoName(errno));
      }
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0 || !(p.revents & POLLIN)) continue;
    ssize_t n = read(fd_, buf.data(), buf.size());
    if (n > 0) {
      st->reads++;
      Emit(st, std::vector<uint8_t>(buf.begin(), buf.begin() + n), "");
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      st->errors++;
      Emit(st, {}, std::string("read: ") + ErrnoName(errno));
    }
  }
}

Napi::Value DvbCaWrap::Caps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ca_caps_t c{};
  if (ioctl(Fd(env), CA_GET_CAP, &c) < 0) ThrowErrno(env, "ioctl", errno, "CA_GET_CAP");
  Napi::Object o = Napi::Object::New(env);
  o.Set("slots", c.slot_num);
  o.Set("slotType", c.slot_type);
  return o;
}

// slotInfo(slot) → {type, present, ready}
Napi::Value DvbCaWrap::SlotInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ca_slot_info_t s{};
  s.num = info[0].As<Napi::Number>().Int32Value();
  if (ioctl(Fd(env), CA_GET_SLOT_INFO, &s) < 0)
    ThrowErrno(env, "ioctl", errno, "CA_GET_SLOT_INFO");
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", s.type);
  o.Set("present", (s.flags & CA_CI_MODULE_PRESENT) != 0);
  o.Set("ready", (s.flags & CA_CI_MODULE_READY) != 0);
  return o;
}

// reset(slot): CA_RESET with the slot's bit; what is queued and not yet written is dropped.
Napi::Value DvbCaWrap::Reset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int slot = info[0].As<Napi::Number>().Int32Value();
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    st_->out.clear();
  }
  if (ioctl(Fd(env), CA_RESET, 1UL << slot) < 0) ThrowErrno(env, "ioctl", errno, "CA_RESET");
  return env.Undefined();
}

// send(buffer): a ca-framed TPDU (slot, t_c_id, TPDU), written on the I/O thread.
Napi::Value DvbCaWrap::Send(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Fd(env);
  auto b = info[0].As<Napi::Buffer<uint8_t>>();
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->out.emplace_back(b.Data(), b.Data() + b.Length());
  return env.Undefined();
}

Napi::Value DvbCaWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  if (!st_) return o;
  o.Set("reads", static_cast<double>(st_->reads));
  o.Set("writes", static_cast<double>(st_->writes));
  o.Set("errors", static_cast<double>(st_->errors));
  return o;
}

void DvbCaWrap::Shutdown() {
  if (st_) {
    st_->stop = true;
    if (io_.joinable()) io_.join();
    st_->tsfn.Release();
    st_.reset();
  }
  if (fd_ >= 0) close(fd_), fd_ = -1;
}

Napi::Value DvbCaWrap::Close(const Napi::CallbackInfo& info) {
  Shutdown();
  return info.Env().Undefined();
}

}  // namespace sluice

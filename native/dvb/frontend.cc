// DvbFrontend (frontend.h): the frontend ioctls of the Linux DVB API v5.
#include "dvb/frontend.h"

#include <fcntl.h>
#include <linux/dvb/frontend.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "util/errors.h"

namespace sluice {

namespace {

/** DiSEqC bus: a command or burst needs this long before the next signal on the line. */
constexpr auto kDiseqcSettle = std::chrono::milliseconds(15);
constexpr int kMaxDiseqc = 6;

uint32_t GetProp(Napi::Env env, int fd, uint32_t cmd) {
  dtv_property p{};
  p.cmd = cmd;
  dtv_properties ps{1, &p};
  if (ioctl(fd, FE_GET_PROPERTY, &ps) < 0) ThrowErrno(env, "ioctl", errno, "FE_GET_PROPERTY");
  return p.u.data;
}

}  // namespace

Napi::Function DvbFrontendWrap::Define(Napi::Env env) {
  return DefineClass(env, "DvbFrontend",
                     {InstanceMethod("info", &DvbFrontendWrap::Info),
                      InstanceMethod("tune", &DvbFrontendWrap::Tune),
                      InstanceMethod("status", &DvbFrontendWrap::Status),
                      InstanceMethod("tuned", &DvbFrontendWrap::Tuned),
                      InstanceMethod("close", &DvbFrontendWrap::Close)});
}

DvbFrontendWrap::DvbFrontendWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<DvbFrontendWrap>(info) {
  int adapter = info[0].As<Napi::Number>().Int32Value();
  int device = info[1].As<Napi::Number>().Int32Value();
  // Read-only: a monitor beside the program that tunes (the kernel allows one writer).
  bool readOnly = info[2].ToBoolean().Value();
  std::string path =
      "/dev/dvb/adapter" + std::to_string(adapter) + "/frontend" + std::to_string(device);
  fd_ = open(path.c_str(), (readOnly ? O_RDONLY : O_RDWR) | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) ThrowErrno(info.Env(), "open", errno, path);
}

DvbFrontendWrap::~DvbFrontendWrap() {
  if (fd_ >= 0) close(fd_);
}

int DvbFrontendWrap::Fd(Napi::Env env) const {
  if (fd_ < 0 || closeAsked_) throw CodedError(env, "ERR_NATIVE_CLOSED", "the frontend is closed");
  return fd_;
}

Napi::Value DvbFrontendWrap::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = Fd(env);
  dvb_frontend_info fi{};
  if (ioctl(fd, FE_GET_INFO, &fi) < 0) ThrowErrno(env, "ioctl", errno, "FE_GET_INFO");
  dtv_property p{};
  p.cmd = DTV_ENUM_DELSYS;
  dtv_properties ps{1, &p};
  if (ioctl(fd, FE_GET_PROPERTY, &ps) < 0) ThrowErrno(env, "ioctl", errno, "FE_GET_PROPERTY");
  Napi::Array systems = Napi::Array::New(env);
  for (uint32_t i = 0; i < p.u.buffer.len && i < sizeof p.u.buffer.data; i++)
    systems.Set(i, p.u.buffer.data[i]);
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", std::string(fi.name, strnlen(fi.name, sizeof fi.name)));
  out.Set("systems", systems);
  out.Set("api", GetProp(env, fd, DTV_API_VERSION));
  return out;
}

namespace {

/** One LNB step, parsed on the JS thread for the worker. */
struct Step {
  enum Op { kVoltage, kTone, kBurst, kDiseqc } op;
  unsigned long value = 0;
  dvb_diseqc_master_cmd cmd{};
};

/** The tuning ioctls off the JS thread (DiSEqC waits on the bus for tens of ms). The frontend
 *  stays open until the worker is done: DvbFrontendWrap defers a close() asked meanwhile. */
class TuneWorker : public Napi::AsyncWorker {
 public:
  TuneWorker(Napi::Env env, DvbFrontendWrap* fe, int fd, uint32_t system, std::vector<Step> steps,
             std::vector<dtv_property> props)
      : Napi::AsyncWorker(env, "sluice-dvb-tune"),
        deferred_(Napi::Promise::Deferred::New(env)),
        fe_(fe),
        fd_(fd),
        system_(system),
        steps_(std::move(steps)),
        props_(std::move(props)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    // A multi-standard frontend is moved to the delivery system first, on its own, as libdvbv5
    // does, so the driver applies the system's defaults before the tuning parameters.
    dtv_property cur{};
    cur.cmd = DTV_DELIVERY_SYSTEM;
    dtv_properties one{1, &cur};
    if (ioctl(fd_, FE_GET_PROPERTY, &one) < 0) return Fail("FE_GET_PROPERTY");
    if (cur.u.data != system_) {
      cur.u.data = system_;
      if (ioctl(fd_, FE_SET_PROPERTY, &one) < 0) return Fail("FE_SET_PROPERTY");
    }
    for (Step& st : steps_) {
      switch (st.op) {
        case Step::kVoltage:
          if (ioctl(fd_, FE_SET_VOLTAGE, st.value) < 0) return Fail("FE_SET_VOLTAGE");
          break;
        case Step::kTone:
          if (ioctl(fd_, FE_SET_TONE, st.value) < 0) return Fail("FE_SET_TONE");
          break;
        case Step::kBurst:
          if (ioctl(fd_, FE_DISEQC_SEND_BURST, st.value) < 0) return Fail("FE_DISEQC_SEND_BURST");
          std::this_thread::sleep_for(kDiseqcSettle);
          break;
        case Step::kDiseqc:
          std::this_thread::sleep_for(kDiseqcSettle);
          if (ioctl(fd_, FE_DISEQC_SEND_MASTER_CMD, &st.cmd) < 0)
            return Fail("FE_DISEQC_SEND_MASTER_CMD");
          std::this_thread::sleep_for(kDiseqcSettle);
          break;
      }
    }
    dtv_properties ps{static_cast<__u32>(props_.size()), props_.data()};
    if (ioctl(fd_, FE_SET_PROPERTY, &ps) < 0) return Fail("FE_SET_PROPERTY");
  }

  void OnOK() override {
    fe_->TuneDone();
    deferred_.Resolve(Env().Undefined());
  }

  void OnError(const Napi::Error&) override {
    fe_->TuneDone();
    deferred_.Reject(
        CodedError(Env(), ErrnoName(errno_), ErrnoMessage("ioctl", errno_, what_), "ioctl").Value());
  }

 private:
  void Fail(const char* what) {
    errno_ = errno;
    what_ = what;
    SetError(what);
  }

  Napi::Promise::Deferred deferred_;
  DvbFrontendWrap* fe_;  // kept alive by the reference Tune() takes
  int fd_;
  uint32_t system_;
  std::vector<Step> steps_;
  std::vector<dtv_property> props_;
  int errno_ = 0;
  const char* what_ = "";
};

}  // namespace

// tune(system, steps, props) → Promise: steps are {op: 'voltage'|'tone'|'burst', value} or
// {op: 'diseqc', msg: number[]}; props are [cmd, value] pairs ending in DTV_TUNE.
Napi::Value DvbFrontendWrap::Tune(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = Fd(env);
  uint32_t system = info[0].As<Napi::Number>().Uint32Value();
  Napi::Array list = info[1].As<Napi::Array>();
  Napi::Array pairs = info[2].As<Napi::Array>();
  std::vector<Step> steps(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Object s = list.Get(i).As<Napi::Object>();
    std::string op = s.Get("op").As<Napi::String>();
    if (op == "diseqc") {
      Napi::Array msg = s.Get("msg").As<Napi::Array>();
      steps[i].op = Step::kDiseqc;
      steps[i].cmd.msg_len = static_cast<__u8>(std::min<uint32_t>(msg.Length(), kMaxDiseqc));
      for (int j = 0; j < steps[i].cmd.msg_len; j++)
        steps[i].cmd.msg[j] = static_cast<__u8>(msg.Get(j).As<Napi::Number>().Uint32Value());
      continue;
    }
    steps[i].value = s.Get("value").As<Napi::Number>().Uint32Value();
    if (op == "voltage") steps[i].op = Step::kVoltage;
    else if (op == "tone") steps[i].op = Step::kTone;
    else if (op == "burst") steps[i].op = Step::kBurst;
    else throw CodedError(env, "ERR_NATIVE_ARG", "unknown LNB step " + op);
  }
  if (pairs.Length() > DTV_IOCTL_MAX_MSGS)
    throw CodedError(env, "ERR_NATIVE_ARG", "too many DTV properties");
  std::vector<dtv_property> props(pairs.Length());
  for (uint32_t i = 0; i < pairs.Length(); i++) {
    Napi::Array pair = pairs.Get(i).As<Napi::Array>();
    props[i].cmd = pair.Get(0u).As<Napi::Number>().Uint32Value();
    props[i].u.data = pair.Get(1u).As<Napi::Number>().Uint32Value();
  }
  auto* w = new TuneWorker(env, this, fd, system, std::move(steps), std::move(props));
  Ref();  // released by TuneDone
  tuning_++;
  w->Queue();
  return w->Promise();
}

void DvbFrontendWrap::TuneDone() {
  if (--tuning_ == 0 && closeAsked_) CloseNow();
  Unref();
}

namespace {

/** One DTV_STAT_* value: a number in its scale's unit, or null when the driver has none. */
Napi::Value StatValue(Napi::Env env, const dtv_property& p, double decibelUnit) {
  if (p.u.st.len == 0) return env.Null();
  const dtv_stats& s = p.u.st.stat[0];
  if (s.scale == FE_SCALE_DECIBEL) return Napi::Number::New(env, s.svalue / decibelUnit);
  if (s.scale == FE_SCALE_COUNTER || s.scale == FE_SCALE_RELATIVE)
    return Napi::Number::New(env, static_cast<double>(s.uvalue));
  return env.Null();
}

}  // namespace

Napi::Value DvbFrontendWrap::Status(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = Fd(env);
  fe_status_t st{};
  if (ioctl(fd, FE_READ_STATUS, &st) < 0) ThrowErrno(env, "ioctl", errno, "FE_READ_STATUS");
  const uint32_t cmds[] = {DTV_STAT_SIGNAL_STRENGTH,     DTV_STAT_CNR,
                           DTV_STAT_PRE_ERROR_BIT_COUNT, DTV_STAT_PRE_TOTAL_BIT_COUNT,
                           DTV_STAT_ERROR_BLOCK_COUNT,   DTV_STAT_TOTAL_BLOCK_COUNT};
  constexpr size_t n = sizeof cmds / sizeof cmds[0];
  dtv_property p[n]{};
  for (size_t i = 0; i < n; i++) p[i].cmd = cmds[i];
  dtv_properties ps{n, p};
  bool stats = ioctl(fd, FE_GET_PROPERTY, &ps) == 0;
  // DTV_STAT decibel values are in 0.001 dB (signal in 0.001 dBm).
  constexpr double kMilli = 1000.0;
  Napi::Object out = Napi::Object::New(env);
  out.Set("status", static_cast<uint32_t>(st));
  out.Set("lock", (st & FE_HAS_LOCK) != 0);
  out.Set("signal", stats ? StatValue(env, p[0], kMilli) : env.Null());
  out.Set("cnr", stats ? StatValue(env, p[1], kMilli) : env.Null());
  out.Set("preErrorBits", stats ? StatValue(env, p[2], kMilli) : env.Null());
  out.Set("preTotalBits", stats ? StatValue(env, p[3], kMilli) : env.Null());
  out.Set("errorBlocks", stats ? StatValue(env, p[4], kMilli) : env.Null());
  out.Set("totalBlocks", stats ? StatValue(env, p[5], kMilli) : env.Null());
  return out;
}

// tuned(): the delivery system and DTV_FREQUENCY the frontend is on (whoever tuned it).
Napi::Value DvbFrontendWrap::Tuned(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = Fd(env);
  dtv_property p[2]{};
  p[0].cmd = DTV_DELIVERY_SYSTEM;
  p[1].cmd = DTV_FREQUENCY;
  dtv_properties ps{2, p};
  if (ioctl(fd, FE_GET_PROPERTY, &ps) < 0) ThrowErrno(env, "ioctl", errno, "FE_GET_PROPERTY");
  Napi::Object out = Napi::Object::New(env);
  out.Set("system", p[0].u.data);
  out.Set("frequency", p[1].u.data);
  return out;
}

// close(releaseLnb): powers the LNB down first unless another receiver shares it; while a
// tuning runs, the close waits for it (the worker holds the descriptor).
Napi::Value DvbFrontendWrap::Close(const Napi::CallbackInfo& info) {
  if (fd_ < 0 || closeAsked_) return info.Env().Undefined();
  releaseLnb_ = info[0].ToBoolean().Value();
  closeAsked_ = true;
  if (tuning_ == 0) CloseNow();
  return info.Env().Undefined();
}

void DvbFrontendWrap::CloseNow() {
  if (fd_ < 0) return;
  if (releaseLnb_) ioctl(fd_, FE_SET_VOLTAGE, SEC_VOLTAGE_OFF);
  close(fd_);
  fd_ = -1;
}

Napi::Value DvbConstants(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object dtv = Napi::Object::New(env);
  const std::pair<const char*, uint32_t> cmds[] = {
      {"TUNE", DTV_TUNE},
      {"CLEAR", DTV_CLEAR},
      {"FREQUENCY", DTV_FREQUENCY},
      {"MODULATION", DTV_MODULATION},
      {"BANDWIDTH_HZ", DTV_BANDWIDTH_HZ},
      {"INVERSION", DTV_INVERSION},
      {"SYMBOL_RATE", DTV_SYMBOL_RATE},
      {"INNER_FEC", DTV_INNER_FEC},
      {"VOLTAGE", DTV_VOLTAGE},
      {"TONE", DTV_TONE},
      {"PILOT", DTV_PILOT},
      {"ROLLOFF", DTV_ROLLOFF},
      {"DELIVERY_SYSTEM", DTV_DELIVERY_SYSTEM},
      {"CODE_RATE_HP", DTV_CODE_RATE_HP},
      {"CODE_RATE_LP", DTV_CODE_RATE_LP},
      {"GUARD_INTERVAL", DTV_GUARD_INTERVAL},
      {"TRANSMISSION_MODE", DTV_TRANSMISSION_MODE},
      {"HIERARCHY", DTV_HIERARCHY},
      {"STREAM_ID", DTV_STREAM_ID}};
  for (const auto& [name, v] : cmds) dtv.Set(name, v);
  Napi::Object sys = Napi::Object::New(env);
  sys.Set("DVBC_ANNEX_A", static_cast<uint32_t>(SYS_DVBC_ANNEX_A));
  sys.Set("DVBC_ANNEX_B", static_cast<uint32_t>(SYS_DVBC_ANNEX_B));
  sys.Set("DVBT", static_cast<uint32_t>(SYS_DVBT));
  sys.Set("DVBS", static_cast<uint32_t>(SYS_DVBS));
  sys.Set("DVBS2", static_cast<uint32_t>(SYS_DVBS2));
  sys.Set("DVBT2", static_cast<uint32_t>(SYS_DVBT2));
  sys.Set("DVBC_ANNEX_C", static_cast<uint32_t>(SYS_DVBC_ANNEX_C));
  Napi::Object other = Napi::Object::New(env);
  other.Set("SEC_VOLTAGE_13", static_cast<uint32_t>(SEC_VOLTAGE_13));
  other.Set("SEC_VOLTAGE_18", static_cast<uint32_t>(SEC_VOLTAGE_18));
  other.Set("SEC_VOLTAGE_OFF", static_cast<uint32_t>(SEC_VOLTAGE_OFF));
  other.Set("SEC_TONE_ON", static_cast<uint32_t>(SEC_TONE_ON));
  other.Set("SEC_TONE_OFF", static_cast<uint32_t>(SEC_TONE_OFF));
  other.Set("SEC_MINI_A", static_cast<uint32_t>(SEC_MINI_A));
  other.Set("SEC_MINI_B", static_cast<uint32_t>(SEC_MINI_B));
  other.Set("FEC_AUTO", static_cast<uint32_t>(FEC_AUTO));
  other.Set("QAM_AUTO", static_cast<uint32_t>(QAM_AUTO));
  other.Set("PILOT_AUTO", static_cast<uint32_t>(PILOT_AUTO));
  other.Set("ROLLOFF_AUTO", static_cast<uint32_t>(ROLLOFF_AUTO));
  other.Set("NO_STREAM_ID_FILTER", static_cast<uint32_t>(NO_STREAM_ID_FILTER));
  Napi::Object out = Napi::Object::New(env);
  out.Set("DTV", dtv);
  out.Set("SYS", sys);
  out.Set("other", other);
  return out;
}

}  // namespace sluice

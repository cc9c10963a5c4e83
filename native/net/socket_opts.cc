// SO_RCVLOWAT on a socket Node owns (socket_opts.h). Linux wakes a reader at once when a
// lowered mark is already met (tcp_set_rcvlowat → tcp_data_ready), so lowering it releases
// bytes held under the old one without waiting for more.
#include "net/socket_opts.h"

#include <sys/socket.h>

#include "util/errors.h"

namespace sluice {

Napi::Value SetRecvLowWater(const Napi::CallbackInfo& info) {
  const int fd = info[0].As<Napi::Number>().Int32Value();
  const int bytes = info[1].As<Napi::Number>().Int32Value();
  if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) != 0) {
    ThrowErrno(info.Env(), "setsockopt", errno, "SO_RCVLOWAT");
  }
  return info.Env().Undefined();
}

Napi::Value RecvLowWater(const Napi::CallbackInfo& info) {
  const int fd = info[0].As<Napi::Number>().Int32Value();
  int bytes = 0;
  socklen_t len = sizeof bytes;
  if (getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, &len) != 0) {
    ThrowErrno(info.Env(), "getsockopt", errno, "SO_RCVLOWAT");
  }
  return Napi::Number::New(info.Env(), bytes);
}

}  // namespace sluice

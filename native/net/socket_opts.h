// Socket options Node does not expose, on a socket Node owns (by its fd): the receive
// low-water mark (SO_RCVLOWAT), which makes epoll report a TCP socket readable only once that
// many bytes are queued, so a slow stream wakes the event loop once per batch of bytes rather
// than once per segment the peer sent. The caller keeps the socket open during the call.
#pragma once
#include <napi.h>

namespace sluice {

/** JS: setRecvLowWater(fd: number, bytes: number) => void; throws the errno (EBADF …). */
Napi::Value SetRecvLowWater(const Napi::CallbackInfo& info);

/** JS: recvLowWater(fd: number) => number: the mark the kernel holds (getsockopt). */
Napi::Value RecvLowWater(const Napi::CallbackInfo& info);

}  // namespace sluice

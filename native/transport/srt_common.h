// What the SRT receiver and sender share: libsrt errors as coded JS errors, IPv4 addresses,
// and the admission of callers by a listener (permitted address, expected stream id, cluster
// peer proof), decided in libsrt's listen callback with a reject reason the caller can read.
#pragma once
#include <napi.h>
#include <netinet/in.h>
#include <srt/access_control.h>
#include <srt/srt.h>

#include <string>

namespace sluice {

/** A libsrt failure as a coded JS error: the system errno's name when there is one. */
[[noreturn]] void ThrowSrt(Napi::Env env, const char* call, const std::string& what = "");

/** `ip`:`port` as a sockaddr_in ('' = any address); throws ERR_NATIVE_ARG naming `what`. */
sockaddr_in Ipv4(Napi::Env env, const std::string& ip, int port, const char* what);

/** An IPv4 socket address as "a.b.c.d:port" ('' for other families). */
std::string AddrString(const sockaddr_storage& ss);

/** The value of key `k` in an SRT Access Control stream id (`#!::k=v,k=v`), or "". */
std::string AcValue(const std::string& sid, const std::string& k);

/** Who a listener admits. Set before srt_listen, read only afterwards (libsrt's thread). */
struct SrtAdmission {
  bool hasPeerFilter = false;
  sockaddr_in peerFilter{};     // the only caller address admitted, when hasPeerFilter
  std::string expectStreamId;   // '' = any stream id (unless peerProof is set)
  std::string peerProof;        // cluster peer-auth: a caller presenting `s=<peerProof>` is in

  /** 0 to admit the caller; else an SRT reject code, with the reason in `why`. */
  int Check(const sockaddr* peer, const std::string& streamId, std::string& why) const;
};

/** The caller's IPv4 address in words, for messages. */
std::string PeerIp(const sockaddr* peer);

/** A socket opened by OpenSrtSocket: listening (with its bound port) or dialling. */
struct SrtOpened {
  SRTSOCKET sock = SRT_INVALID_SOCK;
  int boundPort = 0;   // listener: the port bound (useful with port 0)
  std::string remote;  // caller: the address dialled, as ip:port
};

/**
 * A live-mode SRT socket from a façade's options (port, address, bindIf, latencyMs,
 * lossMaxTtl, overheadPct, maxBw, connectTimeoutMs, tsbpd, passphrase, pbkeylen, streamId),
 * non-blocking both ways. Listening: bound to bindIf:port, `hook` as libsrt's listen callback
 * with `opaque`, then srt_listen(backlog). Calling: the stream id set, bound to bindIf when
 * given, srt_connect started (it completes on libsrt's threads). Throws a coded error, the
 * socket closed, when any step fails.
 */
SrtOpened OpenSrtSocket(Napi::Env env, const Napi::Object& o, bool listen, int backlog,
                        srt_listen_callback_fn* hook, void* opaque);

}  // namespace sluice

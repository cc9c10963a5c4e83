#include "transport/srt_common.h"

#include <arpa/inet.h>

#include "util/errors.h"
#include "util/options.h"

namespace sluice {

void ThrowSrt(Napi::Env env, const char* call, const std::string& what) {
  int sys = 0;
  srt_getlasterror(&sys);
  std::string msg = std::string(call) + ": " + srt_getlasterror_str();
  if (!what.empty()) msg += " (" + what + ")";
  if (sys != 0) throw CodedError(env, ErrnoName(sys), msg, call);
  throw CodedError(env, "ERR_SRT", msg, call);
}

sockaddr_in Ipv4(Napi::Env env, const std::string& ip, int port, const char* what) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (!ip.empty() && inet_pton(AF_INET, ip.c_str(), &sa.sin_addr) != 1) {
    throw CodedError(env, "ERR_NATIVE_ARG", std::string(what) + " is not an IPv4 address: " + ip);
  }
  return sa;
}

std::string AddrString(const sockaddr_storage& ss) {
  char ip[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family != AF_INET) return "";
  const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
  inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
}

std::string PeerIp(const sockaddr* peer) {
  char ip[INET6_ADDRSTRLEN] = "";
  if (peer->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(peer)->sin_addr, ip, sizeof ip);
  }
  return ip;
}

std::string AcValue(const std::string& sid, const std::string& k) {
  if (sid.rfind("#!::", 0) != 0) return "";
  size_t pos = 4;
  while (pos <= sid.size()) {
    size_t end = sid.find(',', pos);
    if (end == std::string::npos) end = sid.size();
    const std::string item = sid.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq != std::string::npos && item.compare(0, eq, k) == 0) return item.substr(eq + 1);
    pos = end + 1;
  }
  return "";
}

namespace {

/** Exact match, or — when the expected stream id is a plain login — an Access Control stream
 *  id whose user (`u=`) is that login. */
bool StreamIdMatches(const std::string& expected, const std::string& got) {
  if (got == expected) return true;
  if (expected.rfind("#!::", 0) == 0) return false;
  return AcValue(got, "u") == expected;
}

}  // namespace

int SrtAdmission::Check(const sockaddr* peer, const std::string& sid, std::string& why) const {
  const std::string who = PeerIp(peer);
  if (hasPeerFilter &&
      (peer->sa_family != AF_INET ||
       reinterpret_cast<const sockaddr_in*>(peer)->sin_addr.s_addr !=
           peerFilter.sin_addr.s_addr)) {
    why = "caller " + who + " refused: not the permitted address (1403)";
    return SRT_REJX_FORBIDDEN;
  }
  // With both a login and peer-auth, either admits; with neither, anyone does.
  const bool byProof = !peerProof.empty() && AcValue(sid, "s") == peerProof;
  const bool byLogin = !expectStreamId.empty() && StreamIdMatches(expectStreamId, sid);
  if ((!peerProof.empty() || !expectStreamId.empty()) && !byProof && !byLogin) {
    why = "caller " + who + " refused: stream id \"" + sid + "\" is " +
          (expectStreamId.empty() ? "not a cluster peer's" : "not the expected one") + " (1401)";
    return SRT_REJX_UNAUTHORIZED;
  }
  return 0;
}

SrtOpened OpenSrtSocket(Napi::Env env, const Napi::Object& o, bool listen, int backlog,
                        srt_listen_callback_fn* hook, void* opaque) {
  const int port = IntOf(o, "port", 0);
  const std::string address = StrOf(o, "address");
  const std::string bindIf = StrOf(o, "bindIf");
  const sockaddr_in remote = Ipv4(env, listen ? "" : address, port, "address");
  const sockaddr_in local = Ipv4(env, bindIf, listen ? port : 0, "bindIf");
  SrtOpened r;
  SRTSOCKET s = srt_create_socket();
  if (s == SRT_INVALID_SOCK) ThrowSrt(env, "srt_create_socket");
  auto fail = [&](const char* call, const std::string& what) {
    try {
      ThrowSrt(env, call, what);
    } catch (...) {
      srt_close(s);
      throw;
    }
  };
  auto set = [&](SRT_SOCKOPT opt, const void* v, int len, const char* name) {
    if (srt_setsockflag(s, opt, v, len) < 0) fail("srt_setsockflag", name);
  };
  const bool no = false;
  const int32_t live = SRTT_LIVE;
  set(SRTO_TRANSTYPE, &live, sizeof live, "SRTO_TRANSTYPE");
  set(SRTO_RCVSYN, &no, sizeof no, "SRTO_RCVSYN");
  set(SRTO_SNDSYN, &no, sizeof no, "SRTO_SNDSYN");
  const int latency = IntOf(o, "latencyMs", 120);
  set(SRTO_LATENCY, &latency, sizeof latency, "SRTO_LATENCY");
  const int ttl = IntOf(o, "lossMaxTtl", 0);
  set(SRTO_LOSSMAXTTL, &ttl, sizeof ttl, "SRTO_LOSSMAXTTL");
  const int overhead = IntOf(o, "overheadPct", 25);
  set(SRTO_OHEADBW, &overhead, sizeof overhead, "SRTO_OHEADBW");
  const int64_t maxBw = Int64Of(o, "maxBw", 0);
  set(SRTO_MAXBW, &maxBw, sizeof maxBw, "SRTO_MAXBW");
  const int timeout = IntOf(o, "connectTimeoutMs", 3000);
  if (timeout > 0) set(SRTO_CONNTIMEO, &timeout, sizeof timeout, "SRTO_CONNTIMEO");
  const bool tsbpd = o.Has("tsbpd") ? BoolOf(o, "tsbpd") : true;
  set(SRTO_TSBPDMODE, &tsbpd, sizeof tsbpd, "SRTO_TSBPDMODE");
  const std::string pass = StrOf(o, "passphrase");
  if (!pass.empty()) {
    set(SRTO_PASSPHRASE, pass.data(), static_cast<int>(pass.size()), "SRTO_PASSPHRASE");
    const int keylen = IntOf(o, "pbkeylen", 16);
    set(SRTO_PBKEYLEN, &keylen, sizeof keylen, "SRTO_PBKEYLEN");
  }
  if (listen) {
    // SRTO_REUSEADDR stays on (libsrt's default): a second listener on a port in use fails at
    // srt_listen ("already listening"), and a port a closed listener held binds again at once
    // (with it off, the old UDP socket lingers until libsrt's collector runs, ~1 s).
    if (srt_bind(s, reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0) {
      fail("srt_bind", (bindIf.empty() ? std::string("0.0.0.0") : bindIf) + ":" +
                           std::to_string(port));
    }
    sockaddr_in bound{};
    int bl = sizeof bound;
    srt_getsockname(s, reinterpret_cast<sockaddr*>(&bound), &bl);
    r.boundPort = ntohs(bound.sin_port);
    if (hook && srt_listen_callback(s, hook, opaque) < 0) fail("srt_listen_callback", "");
    if (srt_listen(s, backlog) < 0) fail("srt_listen", "");
  } else {
    const std::string sid = StrOf(o, "streamId");
    if (!sid.empty()) set(SRTO_STREAMID, sid.data(), static_cast<int>(sid.size()), "SRTO_STREAMID");
    if (!bindIf.empty() && srt_bind(s, reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0) {
      fail("srt_bind", bindIf);
    }
    r.remote = address + ":" + std::to_string(port);
    if (srt_connect(s, reinterpret_cast<const sockaddr*>(&remote), sizeof remote) < 0) {
      fail("srt_connect", r.remote);
    }
  }
  r.sock = s;
  return r;
}

}  // namespace sluice

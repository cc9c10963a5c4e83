// UdpReceiver: a UDP socket whose datagrams the environment's shared receive thread (UdpHub)
// reads with recvmmsg and concatenates into batches (up to N datagrams or T ms) for onEvent;
// its priority says which sockets the hub sheds first when JS falls behind.
#pragma once
#include <napi.h>

#include "util/batch_slab.h"
#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "net/udp_hub.h"

namespace sluice {

struct UdpOptions {
  uint16_t port = 0;
  in_addr address{};
  in_addr bindIf{};
  in_addr ssm{};
  bool multicast = false;
  bool hasSsm = false;
  int bufferSize = 0;
  UdpBatchOptions batch;
};

class UdpReceiverWrap : public Napi::ObjectWrap<UdpReceiverWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit UdpReceiverWrap(const Napi::CallbackInfo& info);
  ~UdpReceiverWrap() override;

  /** Hand one batch (data or fault) to this receiver's onEvent; takes ownership. JS thread. */
  void Emit(Napi::Env env, UdpBatch* b);

 private:
  Napi::Value Rejoin(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value SetPriority(const Napi::CallbackInfo& info);
  Napi::Value GrantedBufferSize(const Napi::CallbackInfo& info);
  Napi::Value Port(const Napi::CallbackInfo& info);

  int Open(Napi::Env env);  // the bound socket
  void Membership(Napi::Env env, int fd, bool add);
  void Shutdown();

  UdpOptions opts_;
  int granted_ = 0;
  uint16_t boundPort_ = 0;
  bool open_ = false;
  Napi::FunctionReference onEvent_;
  // The one block every batch is copied into before onData (valid during the call only): a
  // long-lived ArrayBuffer, grown when a batch does not fit. A new external ArrayBuffer per
  // batch made V8 collect for external-memory pressure several times a second at 100 streams.
  BatchSlab slab_;
  // The pool the hub thread writes batches into (UdpBlock): each block one ArrayBuffer of room
  // for a full batch and its lengths, handed to onData as it is. A batch that finds every block
  // in use (JS behind) is kept on the heap and goes through the slab, and the pool grows by one
  // block, up to kMaxBlocks.
  void AddBlock(Napi::Env env);
  std::vector<Napi::Reference<Napi::ArrayBuffer>> blocks_;
  size_t blockSize_ = 0;
  std::shared_ptr<UdpHub> hub_;
  std::shared_ptr<UdpSocketState> sock_;
};

}  // namespace sluice

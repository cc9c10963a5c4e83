// The hand-off from a receive thread to the JS thread that the UDP, SRT and RIST receivers
// share. Completed batches wait in each receiver's bounded ready queue (overflow is shed there
// and counted by the receiver); the receive thread signals the JS thread once per burst (a
// DrainPump is `pending` from the signal until a slice finds the queues empty); the JS thread
// drains in slices of at most kDrainBudget, then yields to the event loop through the façade's
// pump (a setImmediate) when batches are left, so a flooded receiver never holds the loop.
#pragma once
#include <napi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace sluice {

/** One drain slice hands batches to JS for at most this long. */
constexpr auto kDrainBudget = std::chrono::microseconds(4000);

/**
 * JS thread, after a slice that left `left` batches queued: schedule the next slice through
 * `pump`, or — when the queues looked empty — clear `pending`, then look once more under the
 * lock (`queued` counts; `mu` guards the queues): a batch that arrived while the flag was still
 * set was not signalled and would otherwise wait for the next arrival.
 */
template <typename Queued>
void AfterSlice(std::atomic<bool>& pending, Napi::FunctionReference& pump, size_t left,
                std::mutex& mu, Queued queued, const Napi::Value& self) {
  bool again = left > 0;
  if (!again) {
    pending = false;
    std::lock_guard<std::mutex> lock(mu);
    again = queued() > 0 && !pending.exchange(true);
  }
  if (!again) return;
  if (!pump.IsEmpty()) pump.Call(self, {});
  else pending = false;  // no pump: the next arrival signals again
}

/** A hub's signal-once-per-burst flag and the façade's pump (a function that schedules the next
 *  slice on a later turn of the event loop). */
class DrainPump {
 public:
  /** Receive thread: true when this arrival must signal the JS thread (none is on its way). */
  bool Arm() { return !pending_.exchange(true); }
  /** Forget a signal that could not be sent, or reset for a new start. */
  void Disarm() { pending_ = false; }

  /** JS thread: the façade's pump function (kept from the first receiver that brings one). */
  void Keep(const Napi::Function& pump) {
    if (pump_.IsEmpty() && !pump.IsEmpty()) pump_ = Napi::Persistent(pump);
  }

  /** JS thread, after a slice (AfterSlice). */
  template <typename Queued>
  void After(size_t left, std::mutex& mu, Queued queued, const Napi::Value& self) {
    AfterSlice(pending_, pump_, left, mu, queued, self);
  }

 private:
  std::atomic<bool> pending_{false};
  Napi::FunctionReference pump_;
};

/** Batches waiting in every state of `states` (a map of id → shared_ptr<State>; under `mu`). */
template <typename Map>
size_t QueuedIn(const Map& states) {
  size_t n = 0;
  for (const auto& [id, s] : states) n += s->ready.size();
  return n;
}

/**
 * One drain slice over a hub's receivers: rounds of at most one batch of every receiver that
 * has one — a flooded receiver gets the same share of the slice as a quiet one, and its
 * backlog is shed at its own queue — until the queues are empty or the budget is spent. Each
 * batch goes to its receiver's `wrap->Emit(env, batch)` (which takes it); a receiver closed
 * meanwhile (`wrap` null) has its batches dropped. One receiver's exception does not starve
 * the others: the first is kept in `failure`, to be raised after the slice. Returns the
 * batches still queued. State: `ready` (deque of Item*), `queued` (data batches), `wrap`;
 * Item: `kind`, with `Item::kData` for data batches.
 */
template <typename Map>
size_t DrainSlice(Napi::Env env, std::mutex& mu, const Map& states,
                  std::optional<Napi::Error>& failure) {
  using StatePtr = typename Map::mapped_type;
  const auto start = std::chrono::steady_clock::now();
  std::vector<StatePtr> order;
  for (;;) {
    order.clear();
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [id, s] : states) {
        if (!s->ready.empty()) order.push_back(s);
      }
    }
    if (order.empty()) break;
    for (const auto& s : order) {
      typename std::remove_reference_t<decltype(s->ready)>::value_type b;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (s->ready.empty()) continue;  // closed by an earlier receiver's callback
        b = s->ready.front();
        s->ready.pop_front();
        if (b->kind == std::remove_pointer_t<decltype(b)>::kData) s->queued--;
      }
      auto* w = s->wrap;
      if (!w) {
        delete b;
        continue;
      }
      Napi::HandleScope scope(env);
      try {
        w->Emit(env, b);  // takes b
      } catch (const Napi::Error& e) {
        if (!failure) failure = e;
      }
    }
    if (std::chrono::steady_clock::now() - start >= kDrainBudget) break;
  }
  std::lock_guard<std::mutex> lock(mu);
  return QueuedIn(states);
}

}  // namespace sluice

// writeDurable(path, data): one libuv thread-pool job that writes a file whole or not at all.
#pragma once
#include <napi.h>

namespace sluice {

/** JS: writeDurable(path: string, data: Buffer) => Promise<void>. */
Napi::Value WriteDurable(const Napi::CallbackInfo& info);

/** JS: writeDurableStats() => { copiesMostAtOnce }: the most copies ever running at once (1). */
Napi::Value WriteDurableStats(const Napi::CallbackInfo& info);

}  // namespace sluice

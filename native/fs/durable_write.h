// writeDurable(path, data): one libuv thread-pool job that writes a file whole or not at all.
#pragma once
#include <napi.h>

namespace sluice {

/** JS: writeDurable(path: string, data: Buffer, direct = true) => Promise<void>. With `direct`,
 *  aligned whole pages skip the page cache where the filesystem takes O_DIRECT. */
Napi::Value WriteDurable(const Napi::CallbackInfo& info);

/** JS: writeDurableStats() => { copiesMostAtOnce, direct, buffered, fallbacks, directBytes,
 *  bufferedBytes, refusedFilesystems }: the most copies ever at once (1), which path writes took. */
Napi::Value WriteDurableStats(const Napi::CallbackInfo& info);

}  // namespace sluice

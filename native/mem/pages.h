// Segment memory by the page: blocks that are anonymous mappings of their own (memory only
// where written), the pages past a finished segment handed back to the OS, and what is resident.
#pragma once
#include <napi.h>

namespace sluice {

/** mapBlock(bytes): a Buffer over a private anonymous mapping, unmapped when collected. */
Napi::Value MapBlock(const Napi::CallbackInfo& info);
/** discardPages(block, from): the whole pages of a mapBlock Buffer from `from` on go back to
 *  the OS (they read as zero after); returns the bytes given back. */
Napi::Value DiscardPages(const Napi::CallbackInfo& info);
/** residentBytes(buffer): bytes of the pages under the Buffer that are in memory (mincore). */
Napi::Value ResidentBytes(const Napi::CallbackInfo& info);

}  // namespace sluice

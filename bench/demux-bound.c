/* C loop bound for bench/demux.ts: per packet, a PID lookup and a copy into the output buffer of
   the programme the PID belongs to (20 outputs), one call per receiver-sized batch, over a
   cache-resident buffer. No table is parsed or rebuilt: the least any demuxer must do.
   Usage: demux-bound FILE SECONDS PIDMAP  (PIDMAP: "pid:out,pid:out,…"; out 255 = every output) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PKT 188
#define BATCH (64 * 7 * PKT)
#define OUTS 20

static uint8_t route[8192];
static uint8_t *out[OUTS];
static size_t len[OUTS];
static uint64_t sink;

static void copy(const uint8_t *b, size_t n) {
  for (int i = 0; i < OUTS; i++) len[i] = 0;
  for (size_t o = 0; o + PKT <= n; o += PKT) {
    unsigned pid = ((b[o + 1] & 0x1f) << 8) | b[o + 2];
    unsigned r = route[pid];
    if (r == 0) continue;
    if (r == 255) {
      for (int i = 0; i < OUTS; i++) { memcpy(out[i] + len[i], b + o, PKT); len[i] += PKT; }
    } else {
      memcpy(out[r - 1] + len[r - 1], b + o, PKT);
      len[r - 1] += PKT;
    }
  }
  for (int i = 0; i < OUTS; i++) sink += len[i] + (len[i] ? out[i][len[i] - 1] : 0);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  size_t size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(size);
  if (fread(buf, 1, size, f) != size) return 1;
  fclose(f);
  for (char *s = strtok(argv[3], ","); s; s = strtok(NULL, ",")) {
    unsigned pid, o;
    if (sscanf(s, "%u:%u", &pid, &o) == 2) route[pid & 8191] = o == 255 ? 255 : o + 1;
  }
  for (int i = 0; i < OUTS; i++) out[i] = malloc(BATCH);
  double secs = atof(argv[2]), t0 = now(), el = 0;
  uint64_t bytes = 0;
  size_t whole = size - size % BATCH;
  while (el < secs) {
    for (size_t o = 0; o < whole; o += BATCH) copy(buf + o, BATCH);
    bytes += whole;
    el = now() - t0;
  }
  printf("{\"bytes\":%llu,\"seconds\":%f,\"sink\":%llu}\n", (unsigned long long)bytes, el,
         (unsigned long long)sink);
  return 0;
}

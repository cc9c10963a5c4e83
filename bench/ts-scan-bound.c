/* C loop bound for bench/ts-scan.ts: the same per-packet work as the native analyzer's hot path
   (sync check, PID lookup, continuity, adaptation field and PCR, PES PTS peek), one call per
   datagram-sized batch, over a cache-resident buffer. Usage: ts-scan-bound FILE SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PKT 188
#define DGRAM (7 * PKT)

typedef struct {
  uint8_t cc, valid;
  uint64_t packets, errors;
  int64_t last_pcr;
  double last_pts_ms;
} pid_state;

static pid_state pids[8192];
static uint64_t cc_errors, pcr_count, pts_count;

static void scan(const uint8_t *b, size_t len, double now) {
  for (size_t o = 0; o + PKT <= len; o += PKT) {
    const uint8_t *p = b + o;
    if (p[0] != 0x47) continue;
    unsigned pid = ((p[1] & 0x1f) << 8) | p[2];
    pid_state *st = &pids[pid];
    st->packets++;
    if (pid == 0x1fff || (p[1] & 0x80)) continue;
    unsigned afc = (p[3] >> 4) & 3, cc = p[3] & 15, off = 4;
    int disc = 0;
    if (afc & 2) {
      unsigned alen = p[4];
      if (alen > 183) continue;
      if (alen) {
        disc = p[5] & 0x80;
        if ((p[5] & 0x10) && alen >= 7) {
          int64_t base = ((int64_t)p[6] << 25) | (p[7] << 17) | (p[8] << 9) | (p[9] << 1) | (p[10] >> 7);
          st->last_pcr = base * 300 + (((p[10] & 1) << 8) | p[11]);
          pcr_count++;
        }
      }
      off = 5 + alen;
    }
    if (!(afc & 1)) continue;
    if (st->valid && !disc && cc != ((st->cc + 1) & 15) && cc != st->cc) { st->errors++; cc_errors++; }
    st->cc = cc;
    st->valid = 1;
    if ((p[1] & 0x40) && off + 14 <= PKT && p[off] == 0 && p[off + 1] == 0 && p[off + 2] == 1 &&
        (p[off + 7] & 0x80)) {
      st->last_pts_ms = now;
      pts_count++;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  static uint8_t buf[256 * DGRAM];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  len -= len % DGRAM;
  double secs = atof(argv[2]);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uint64_t bytes = 0;
  double el = 0, now = 0;
  while (el < secs) {
    for (size_t o = 0; o < len; o += DGRAM) scan(buf + o, DGRAM, now += 0.005);
    bytes += len;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  }
  printf("{\"bytes\":%llu,\"seconds\":%f,\"ccErrors\":%llu,\"pcr\":%llu,\"pts\":%llu}\n",
         (unsigned long long)bytes, el, (unsigned long long)cc_errors, (unsigned long long)pcr_count,
         (unsigned long long)pts_count);
  return 0;
}

/* C peer for bench/fec-recovery.ts: the same SMPTE 2022-1 receive work as the TypeScript path
   (media kept in a 1024-slot ring by sequence number, FEC header parsed and checked, holes
   counted per row/column, a single hole rebuilt by XOR of payload, length, PT, timestamp,
   waiting FEC retried after each media packet and each recovery), over the prepared event file
   (u8 kind 0 media / 1 FEC, u16 length, bytes), repeated for SECONDS of CPU time.
   Prints JSON: events, media packets, recovered, CPU seconds. Usage: fec-recovery-peer FILE SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 1024
#define MAXP 256

typedef struct { uint8_t kind; uint16_t len; const uint8_t *d; } event;
typedef struct { int row, sn, offset, na; const uint8_t *d; uint16_t len; } fec;

static int ring_seq[RING];
static const uint8_t *ring_data[RING];
static uint16_t ring_len[RING];
static uint8_t recovered_store[RING][1612];
static fec pending[MAXP];
static int npending, highest = -1;
static uint64_t recovered;
static uint8_t ring_ssrc[4];

static int delta(int a, int b) { return ((b - a + 0x8000) & 0xffff) - 0x8000; }
static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 0 done, 1 wait, 2 recovered */
static int try_fec(const fec *f) {
  int missing = -1;
  for (int i = 0; i < f->na; i++) {
    int s = (f->sn + i * f->offset) & 0xffff;
    if (ring_seq[s & (RING - 1)] == s) continue;
    if (missing >= 0) return 1;
    missing = s;
  }
  if (missing < 0) return 0;
  if (delta(highest, missing) >= 0) return 1;
  const uint8_t *h = f->d + 12;
  uint16_t plen = f->len - 28;
  uint8_t *dg = recovered_store[missing & (RING - 1)], *body = dg + 12;
  memcpy(body, h + 16, plen);
  unsigned len = (h[2] << 8) | h[3], pt = h[4] & 0x7f;
  uint32_t ts = ((uint32_t)h[8] << 24) | (h[9] << 16) | (h[10] << 8) | h[11];
  for (int i = 0; i < f->na; i++) {
    int s = (f->sn + i * f->offset) & 0xffff;
    if (s == missing) continue;
    const uint8_t *p = ring_data[s & (RING - 1)];
    unsigned n = ring_len[s & (RING - 1)] - 12;
    if (n > plen) return 0;
    uint64_t *a = (uint64_t *)body;
    for (unsigned w = 0; w < n / 8; w++) {
      uint64_t v;
      memcpy(&v, p + 12 + w * 8, 8);
      a[w] ^= v;
    }
    for (unsigned k = n & ~7u; k < n; k++) body[k] ^= p[12 + k];
    len ^= n;
    pt ^= p[1] & 0x7f;
    ts ^= ((uint32_t)p[4] << 24) | (p[5] << 16) | (p[6] << 8) | p[7];
  }
  if (len > plen) return 0;
  dg[0] = 0x80;
  dg[1] = pt;
  dg[2] = missing >> 8;
  dg[3] = missing;
  dg[4] = ts >> 24, dg[5] = ts >> 16, dg[6] = ts >> 8, dg[7] = ts;
  memcpy(dg + 8, ring_ssrc, 4);
  ring_seq[missing & (RING - 1)] = missing;
  ring_data[missing & (RING - 1)] = dg;
  ring_len[missing & (RING - 1)] = len + 12;
  recovered++;
  return 2;
}

static void resolve(void) {
  for (int progress = 1; progress;) {
    progress = 0;
    for (int i = 0; i < npending;) {
      int r = try_fec(&pending[i]);
      if (r == 1) { i++; continue; }
      pending[i] = pending[--npending];
      if (r == 2) progress = 1;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  FILE *fp = fopen(argv[1], "rb");
  if (!fp) return 1;
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  uint8_t *buf = malloc(size);
  if (fread(buf, 1, size, fp) != (size_t)size) return 1;
  fclose(fp);
  size_t cap = 1 << 16, n = 0;
  event *ev = malloc(cap * sizeof(event));
  for (long o = 0; o + 3 <= size;) {
    if (n == cap) ev = realloc(ev, (cap *= 2) * sizeof(event));
    ev[n].kind = buf[o];
    ev[n].len = buf[o + 1] | (buf[o + 2] << 8);
    ev[n].d = buf + o + 3;
    o += 3 + ev[n].len;
    n++;
  }
  double seconds = atof(argv[2]), t0 = cpu(), t = t0;
  uint64_t events = 0, media = 0, rounds = 0;
  while (t - t0 < seconds) {
    for (int i = 0; i < RING; i++) ring_seq[i] = -1;
    npending = 0;
    highest = -1;
    for (size_t i = 0; i < n; i++) {
      const uint8_t *d = ev[i].d;
      if (ev[i].kind == 0) {
        if (ev[i].len < 12 || (d[0] >> 6) != 2) continue;
        int seq = (d[2] << 8) | d[3];
        int slot = seq & (RING - 1);
        if (ring_seq[slot] == seq) continue;
        ring_seq[slot] = seq;
        ring_data[slot] = d;
        ring_len[slot] = ev[i].len;
        memcpy(ring_ssrc, d + 8, 4);
        if (highest < 0 || delta(highest, seq) > 0) highest = seq;
        media++;
        if (npending) resolve();
      } else {
        if (ev[i].len < 28) continue;
        const uint8_t *h = d + 12;
        if (!(h[4] & 0x80) || h[5] || h[6] || h[7] || (h[12] & 0xbf)) continue;
        fec f = {(h[12] & 0x40) != 0, (h[0] << 8) | h[1], h[13], h[14], d, ev[i].len};
        if (f.na < 1 || f.offset < 1 || f.na > 20 || f.offset > 20 || f.na * f.offset > 100) continue;
        if (highest < 0 || delta(highest, f.sn) < -824) continue;
        int r = try_fec(&f);
        if (r == 1 && npending < MAXP) pending[npending++] = f;
        else if (r == 2) resolve();
      }
      events++;
    }
    rounds++;
    t = cpu();
  }
  printf("{\"events\":%llu,\"media\":%llu,\"recovered\":%llu,\"rounds\":%llu,\"seconds\":%.4f}\n",
         (unsigned long long)events, (unsigned long long)media, (unsigned long long)recovered,
         (unsigned long long)rounds, t - t0);
  return 0;
}

/* libdvbcsa's own batch loop for bench/biss.ts: the same multiplex, the same receiver-sized
   batches, each copied from the pristine scrambled buffer into a work buffer (as the
   descrambler's caller must: a descrambled packet is no longer scrambled), then every scrambled
   packet's payload (after its adaptation field) handed to dvbcsa_bs_decrypt in batches of
   dvbcsa_bs_batch_size() packets of one control word — what libdvbcsa's benchbitslice does,
   over TS packets; with several control words, one batch per word, each flushed at the end of
   the receiver batch (the packets must go on descrambled). No PAT/PMT is read and no PES start
   verified: the least a BISS descrambler must do.
   Usage: biss-bound FILE SECONDS MAP  (MAP: "pid:cw,pid:cw,…", cw 16 hex digits) */
#include <dvbcsa/dvbcsa.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PKT 188
#define BATCH (64 * 7 * PKT)

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
  static int slotOf[8192];
  for (int i = 0; i < 8192; i++) slotOf[i] = -1;
  struct dvbcsa_bs_key_s *keys[64];
  unsigned char cws[64][8];
  int nkeys = 0;
  for (char *s = strtok(argv[3], ","); s; s = strtok(NULL, ",")) {
    unsigned pid;
    char hex[17];
    if (sscanf(s, "%u:%16s", &pid, hex) != 2) return 2;
    dvbcsa_cw_t cw;
    for (int i = 0; i < 8; i++) {
      unsigned v;
      if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 2;
      cw[i] = (unsigned char)v;
    }
    int k = 0;
    while (k < nkeys && memcmp(cws[k], cw, 8) != 0) k++;
    if (k == nkeys) {
      if (nkeys == 64) return 2;
      memcpy(cws[k], cw, 8);
      keys[k] = dvbcsa_bs_key_alloc();
      dvbcsa_bs_key_set(cw, keys[k]);
      nkeys++;
    }
    slotOf[pid & 8191] = k;
  }
  unsigned bs = dvbcsa_bs_batch_size();
  struct dvbcsa_bs_batch_s *batch[64];
  unsigned n[64] = {0};
  for (int k = 0; k < nkeys; k++) batch[k] = calloc(bs + 1, sizeof **batch);
  uint8_t *work = malloc(BATCH);
  uint64_t sink = 0, packets = 0;
  double secs = atof(argv[2]), t0 = now(), el = 0;
  uint64_t bytes = 0;
  size_t whole = size - size % BATCH;
  while (el < secs) {
    for (size_t o = 0; o < whole; o += BATCH) {
      memcpy(work, buf + o, BATCH);
      for (size_t p = 0; p < BATCH; p += PKT) {
        uint8_t *h = work + p;
        if (!(h[3] & 0x80) || !(h[3] & 0x10)) continue;
        int k = slotOf[((h[1] & 0x1f) << 8) | h[2]];
        if (k < 0) continue;
        size_t off = (h[3] & 0x20) ? 5 + h[4] : 4;
        if (off >= PKT) continue;
        h[3] &= 0x3f;
        batch[k][n[k]].data = h + off;
        batch[k][n[k]].len = PKT - off;
        if (++n[k] == bs) {
          batch[k][n[k]].data = NULL;
          dvbcsa_bs_decrypt(keys[k], batch[k], 184);
          packets += n[k];
          n[k] = 0;
        }
      }
      for (int k = 0; k < nkeys; k++) {
        if (!n[k]) continue;
        batch[k][n[k]].data = NULL;
        dvbcsa_bs_decrypt(keys[k], batch[k], 184);
        packets += n[k];
        n[k] = 0;
      }
      sink += work[BATCH - 1];
    }
    bytes += whole;
    el = now() - t0;
  }
  printf("{\"bytes\":%llu,\"seconds\":%f,\"packets\":%llu,\"sink\":%llu}\n",
         (unsigned long long)bytes, el, (unsigned long long)packets, (unsigned long long)sink);
  for (int k = 0; k < nkeys; k++) dvbcsa_bs_key_free(keys[k]);
  return 0;
}
